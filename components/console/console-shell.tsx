'use client';

import Link from 'next/link';
import { usePathname, useRouter } from 'next/navigation';
import { useEffect, type ReactNode } from 'react';
import { isLeaseholdError } from '@/lib/client';
import { Brand } from '@/components/console/brand';
import { useSignOut } from '@/components/console/sign-out';
import { startWhoamiEarly, useWhoami } from '@/components/console/use-whoami';
import { Button } from '@/components/ui/button';
import { cn } from '@/components/ui/cn';
import { ErrorAlert } from '@/components/ui/states';
import { ThemeToggle } from '@/components/ui/theme-toggle';

startWhoamiEarly();

const NAV = [
  { href: '/leases', label: 'Leases' },
  { href: '/sessions', label: 'Sessions' },
  { href: '/metrics', label: 'Metrics' },
  { href: '/audit', label: 'Audit' },
  { href: '/tokens', label: 'Tokens' },
  { href: '/policies', label: 'Policies' },
] as const;

/**
 * The signed-in frame of every console page: navigation, who is signed in,
 * Sign out. Without a valid login cookie it sends the reader to /login and
 * comes back afterwards.
 */
export function ConsoleShell({ children }: { children: ReactNode }) {
  const me = useWhoami();
  const router = useRouter();
  const pathname = usePathname();
  const signOut = useSignOut();
  const signedOut = isLeaseholdError(me.error, 'invalid_credential');

  useEffect(() => {
    if (signedOut) router.replace(`/login?next=${encodeURIComponent(window.location.pathname + window.location.search)}`);
  }, [signedOut, router]);

  return (
    <div className="flex min-h-dvh flex-col">
      <header className="border-b border-zinc-200 bg-white/80 backdrop-blur dark:border-zinc-800 dark:bg-zinc-950/80">
        <div className="mx-auto flex w-full max-w-7xl flex-wrap items-center gap-x-6 gap-y-2 px-6 py-3">
          <Brand href="/leases" />
          {me.data && (
            <nav aria-label="Main" className="flex flex-wrap items-center gap-1">
              {NAV.map((item) => {
                const active = pathname === item.href || pathname.startsWith(`${item.href}/`);
                return (
                  <Link
                    key={item.href}
                    href={item.href}
                    // No prefetch: five page payloads rendered at every page load would
                    // queue in front of the page's own API calls on the one Node thread.
                    prefetch={false}
                    aria-current={active ? 'page' : undefined}
                    className={cn(
                      'rounded-md px-3 py-1.5 text-sm font-medium transition-colors',
                      active
                        ? 'bg-zinc-100 text-zinc-900 dark:bg-zinc-800 dark:text-zinc-50'
                        : 'text-zinc-600 hover:bg-zinc-50 hover:text-zinc-900 dark:text-zinc-400 dark:hover:bg-zinc-900 dark:hover:text-zinc-100',
                    )}
                  >
                    {item.label}
                  </Link>
                );
              })}
            </nav>
          )}
          <div className="ml-auto flex items-center gap-3">
            {me.data && (
              <span className="hidden text-right text-xs leading-tight text-zinc-600 sm:block dark:text-zinc-400" title={me.data.grants.join('\n')}>
                <span className="block font-medium text-zinc-900 dark:text-zinc-100">{me.data.name}</span>
                family <span className="font-mono">{me.data.family}</span>
                {me.data.root && ' · root'}
              </span>
            )}
            <ThemeToggle />
            {me.data && (
              <Button size="sm" onClick={() => void signOut()}>
                Sign out
              </Button>
            )}
          </div>
        </div>
      </header>
      <main className="mx-auto w-full max-w-7xl flex-1 px-6 py-8">
        {/* Pages start their own reads while whoami is in flight (no waterfall); they gate actions on it. */}
        {me.data || me.isPending ? (
          children
        ) : me.error && !signedOut ? (
          <ErrorAlert error={me.error} title="The console cannot reach the server" action={<Button onClick={() => void me.refetch()}>Try again</Button>} />
        ) : (
          <p role="status" className="text-sm text-zinc-500">
            Signed out: taking you to the login page…
          </p>
        )}
      </main>
    </div>
  );
}
