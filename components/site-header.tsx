import { ThemeToggle } from '@/components/ui/theme-toggle';

export function SiteHeader() {
  return (
    <header className="mx-auto flex w-full max-w-5xl items-center justify-between px-6 py-5">
      <a href="/" className="inline-flex items-center gap-2.5 rounded-md font-semibold tracking-tight">
        <svg aria-hidden="true" viewBox="0 0 32 32" className="size-7">
          <rect width="32" height="32" rx="7" className="fill-teal-700 dark:fill-teal-500" />
          <path d="M11 8v13.5h10" fill="none" stroke="#fff" strokeWidth="3.2" strokeLinecap="round" strokeLinejoin="round" />
          <circle cx="21" cy="11" r="2.6" className="fill-teal-300 dark:fill-teal-100" />
        </svg>
        Leasehold
      </a>
      <nav aria-label="Site" className="flex items-center gap-2">
        <a
          href="/api/v1/openapi.json"
          className="rounded-md px-3 py-2 text-sm text-zinc-600 transition-colors hover:text-zinc-900 dark:text-zinc-400 dark:hover:text-zinc-100"
        >
          API reference
        </a>
        <ThemeToggle />
      </nav>
    </header>
  );
}
