import { create } from 'zustand';

/**
 * What the Feed badge says (docs/console.md): `live` when the stream is open and
 * every selector is registered, `reconnecting` while connecting or
 * resyncing, `stale` when the stream was closed for good or fell silent.
 */
type FeedState = 'idle' | 'connecting' | 'live' | 'reconnecting' | 'stale';

interface FeedStore {
  state: FeedState;
  /** The newest revision seen (hello, then every change). */
  revision: number | null;
  /** Why the feed is not live, in words. */
  detail: string | null;
  /** Selectors the server refused to stream, with its message. */
  refused: Record<string, string>;
  feedConnecting: (again: boolean) => void;
  feedOpened: (revision: number) => void;
  changeArrived: (revision: number) => void;
  feedLost: (state: 'reconnecting' | 'stale', detail: string) => void;
  feedStopped: () => void;
  selectorRefused: (selector: string, message: string) => void;
  selectorAccepted: (selector: string) => void;
}

export const useFeedStore = create<FeedStore>()((set) => ({
  state: 'idle',
  revision: null,
  detail: null,
  refused: {},
  feedConnecting: (again) => set((s) => ({ state: again || s.state === 'stale' ? (s.state === 'stale' ? 'stale' : 'reconnecting') : 'connecting' })),
  feedOpened: (revision) => set((s) => ({ state: 'live', detail: null, revision: Math.max(revision, s.revision ?? 0) })),
  changeArrived: (revision) => set((s) => (s.revision !== null && s.revision >= revision ? s : { revision })),
  feedLost: (state, detail) => set({ state, detail }),
  feedStopped: () => set({ state: 'idle', detail: null, revision: null, refused: {} }),
  selectorRefused: (selector, message) => set((s) => ({ refused: { ...s.refused, [selector]: message } })),
  selectorAccepted: (selector) =>
    set((s) => {
      if (!(selector in s.refused)) return s;
      const { [selector]: _gone, ...rest } = s.refused;
      return { refused: rest };
    }),
}));
