import Link from 'next/link';
import { Brand } from '@/components/console/brand';
import { ThemeToggle } from '@/components/ui/theme-toggle';

export function SiteHeader() {
  return (
    <header className="mx-auto flex w-full max-w-5xl items-center justify-between px-6 py-5">
      <Brand />
      <nav aria-label="Site" className="flex items-center gap-2">
        <a
          href="/api/v1/openapi.json"
          className="rounded-md px-3 py-2 text-sm text-zinc-600 transition-colors hover:text-zinc-900 dark:text-zinc-400 dark:hover:text-zinc-100"
        >
          API reference
        </a>
        <Link
          href="/leases"
          className="rounded-md px-3 py-2 text-sm font-medium text-teal-700 transition-colors hover:text-teal-900 dark:text-teal-400 dark:hover:text-teal-300"
        >
          Open the console
        </Link>
        <ThemeToggle />
      </nav>
    </header>
  );
}
