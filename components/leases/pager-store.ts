import { create } from 'zustand';

interface PagerState {
  /** The view the trail belongs to (selector, filters, page size). */
  view: string;
  /** Cursors of the pages before the current one, oldest first (`null`: the first page). */
  trail: (string | null)[];
  /** Next page: remember where we were. */
  pageTurnedForward: (view: string, from: string | null) => void;
  /** Previous page: forget the last page seen and return its cursor (the first page when none is known). */
  pageTurnedBack: (view: string) => string | null;
}

/** Previous goes back through the cursors seen (CONSOLE.md); cursors only point forward. */
export const usePagerStore = create<PagerState>()((set, get) => ({
  view: '',
  trail: [],
  pageTurnedForward: (view, from) => set((s) => ({ view, trail: s.view === view ? [...s.trail, from] : [from] })),
  pageTurnedBack: (view) => {
    const s = get();
    if (s.view !== view || s.trail.length === 0) {
      set({ view, trail: [] });
      return null;
    }
    const trail = s.trail.slice(0, -1);
    set({ trail });
    return s.trail.at(-1) ?? null;
  },
}));
