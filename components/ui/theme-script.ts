export const THEME_STORAGE_KEY = 'leasehold-theme';

/**
 * Runs before first paint, so a dark-mode reader never sees a white flash:
 * an explicit choice wins, otherwise the system preference. The theme store
 * adopts whatever this decided once React has hydrated.
 */
export const themeScript = `(() => {
  try {
    const saved = localStorage.getItem(${JSON.stringify(THEME_STORAGE_KEY)});
    const dark = saved ? saved === 'dark' : matchMedia('(prefers-color-scheme: dark)').matches;
    document.documentElement.classList.toggle('dark', dark);
  } catch {}
})();`;
