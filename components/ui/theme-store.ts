import { create } from 'zustand';
import { THEME_STORAGE_KEY } from '@/components/ui/theme-script';

export type Theme = 'light' | 'dark';

interface ThemeState {
  /** Starts as 'light' on server and client alike, so hydration agrees. */
  theme: Theme;
  /** The page has hydrated and read the theme the pre-paint script applied. */
  themeDetected: () => void;
  /** The reader flipped the toggle; the choice is remembered per browser. */
  themeToggled: () => void;
}

function apply(theme: Theme): void {
  document.documentElement.classList.toggle('dark', theme === 'dark');
  try {
    localStorage.setItem(THEME_STORAGE_KEY, theme);
  } catch {
    // Storage can be disabled (private mode, policy); the toggle still works for this page.
  }
}

export const useThemeStore = create<ThemeState>()((set, get) => ({
  theme: 'light',
  themeDetected: () =>
    set({ theme: document.documentElement.classList.contains('dark') ? 'dark' : 'light' }),
  themeToggled: () => {
    const theme: Theme = get().theme === 'dark' ? 'light' : 'dark';
    apply(theme);
    set({ theme });
  },
}));
