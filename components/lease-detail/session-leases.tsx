'use client';

import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { useMemo, useState } from 'react';
import type { LeaseView, Whoami } from '@/lib/client';
import { implies } from '@/lib/grants';
import { contains } from '@/lib/selector';
import { consoleClient } from '@/components/console/client';
import { can, parsedGrants, useWhoami } from '@/components/console/use-whoami';
import { queryKeys } from '@/components/query-keys';
import { Button } from '@/components/ui/button';

/** Routes a page of the preview shows. */
const PAGE_SIZE = 50;
/** Pages of 1,000 read to count a session's leases when its lease_count is out of reach; past this the count says "at least". */
const MAX_COUNT_PAGES = 10;

/** Where a page of the preview starts: the selector (index) and cursor of LIST, and how many routes came before it. */
interface Position {
  selector: number;
  cursor: string | undefined;
  offset: number;
}

interface Page {
  /** How many routes came before this page's first. */
  offset: number;
  routes: string[];
  next: Position | null;
}

/** How many other leases closing the session ends (`exact`), or how many the caller can see (`exact: false` when the walk stopped early). */
interface Count {
  others: number;
  /** The session's own lease_count: every lease the close ends, seen by the caller or not. */
  fromSession: boolean;
  exact: boolean;
}

/**
 * The selectors to list the session's leases through: `lease://**` for a
 * caller who may read everything, else the caller's readable grant
 * selectors, less those inside another (each route is then listed once,
 * unless two grants overlap without one containing the other).
 */
function listSelectors(me: Whoami): string[] {
  if (can(me, 'lease://**', 'read')) return ['lease://**'];
  const readable = parsedGrants(me).filter((g) => implies(g.permission, 'read'));
  const kept = readable.filter((g, i) => !readable.some((h, j) => j !== i && contains(h.triple, g.triple) && (!contains(g.triple, h.triple) || j < i)));
  return [...new Set(kept.map((g) => g.selector))];
}

/**
 * One page of the session's other leases from `at`: LIST filtered by the
 * holder's incarnation, the revoked route left out, moving on to the next
 * selector when one runs out (an empty page is never shown while more remain).
 */
async function fetchPage(selectors: readonly string[], seen: LeaseView, at: Position): Promise<Page> {
  let pos: Omit<Position, 'offset'> | null = at;
  const routes: string[] = [];
  while (pos && routes.length === 0) {
    const page = await consoleClient().listPage(selectors[pos.selector]!, { holderIncarnation: seen.holder_incarnation, limit: PAGE_SIZE, cursor: pos.cursor });
    routes.push(...page.items.map((l) => l.route).filter((r) => r !== seen.route));
    pos = page.next_cursor ? { selector: pos.selector, cursor: page.next_cursor } : pos.selector + 1 < selectors.length ? { selector: pos.selector + 1, cursor: undefined } : null;
  }
  return { offset: at.offset, routes, next: pos && { ...pos, offset: at.offset + routes.length } };
}

/**
 * The count the close will end: the session's lease_count (sessions are
 * listed by owner; it needs read on `lease://**`), less the revoked lease.
 * Without that read, the leases the caller can see, counted through LIST.
 */
async function countOthers(me: Whoami, selectors: readonly string[], seen: LeaseView): Promise<Count> {
  if (can(me, 'lease://**', 'read')) {
    let cursor: string | undefined;
    for (let pages = 0; pages < MAX_COUNT_PAGES; pages++) {
      const page = await consoleClient().listSessions({ ownerId: seen.owner_id, limit: 1000, cursor });
      const session = page.items.find((s) => s.holder_incarnation === seen.holder_incarnation);
      if (session) return { others: Math.max(0, session.lease_count - 1), fromSession: true, exact: true };
      if (!page.next_cursor) break;
      cursor = page.next_cursor;
    }
  }
  const routes = new Set<string>();
  let pages = 0;
  for (const selector of selectors) {
    let cursor: string | undefined;
    do {
      const page = await consoleClient().listPage(selector, { holderIncarnation: seen.holder_incarnation, limit: 1000, cursor });
      for (const l of page.items) if (l.route !== seen.route) routes.add(l.route);
      cursor = page.next_cursor ?? undefined;
    } while (cursor && ++pages < MAX_COUNT_PAGES);
    if (cursor) return { others: routes.size, fromSession: false, exact: false };
  }
  return { others: routes.size, fromSession: false, exact: true };
}

function sentence(count: Count): string {
  const n = count.others;
  if (count.fromSession) {
    if (n === 0) return 'No other lease of this session would end.';
    if (n === 1) return 'This other lease would also end (2 with this one):';
    return `These ${n.toLocaleString('en-US')} other leases would also end (${(n + 1).toLocaleString('en-US')} with this one):`;
  }
  if (n === 0) return 'No other lease of this session is visible to you.';
  const atLeast = count.exact ? '' : 'at least ';
  return n === 1 ? 'This other lease you can see would also end:' : `These ${atLeast}${n.toLocaleString('en-US')} other leases you can see would also end:`;
}

/**
 * What closing the holder's session would end besides the revoked lease:
 * the count the server will act on (the session's lease_count), and every
 * one of those leases, a page of 50 at a time. Unless the caller administers
 * every route, also that the server refuses a close that would end a lease
 * outside its admin grants.
 */
export function SessionLeases({ seen }: { seen: LeaseView }) {
  const me = useWhoami().data;
  const selectors = useMemo(() => (me ? listSelectors(me) : []), [me]);
  const base = queryKeys.sessionLeases(seen.holder_incarnation);
  const count = useQuery({ queryKey: [...base, 'count', seen.route], queryFn: () => countOthers(me!, selectors, seen), enabled: !!me });
  const [trail, setTrail] = useState<Position[]>([{ selector: 0, cursor: undefined, offset: 0 }]);
  const at = trail[trail.length - 1]!;
  const page = useQuery({
    queryKey: [...base, 'page', seen.route, selectors, at.selector, at.cursor ?? null],
    queryFn: () => fetchPage(selectors, seen, at),
    enabled: selectors.length > 0,
    placeholderData: keepPreviousData,
  });
  const everywhere = can(me, 'lease://**', 'admin');
  const routes = page.data?.routes ?? [];
  const next = page.data?.next ?? null;
  const beyond = routes.some((r) => !can(me, r, 'admin'));
  const total = count.data?.others;
  // While the next page loads, the previous one stays on screen, with its own numbers.
  const shownFrom = page.data?.offset ?? 0;
  const paged = trail.length > 1 || next !== null;

  return (
    <section aria-label="Other leases of this session" className="mt-2 text-xs text-zinc-600 dark:text-zinc-300" data-testid="session-leases">
      <div aria-live="polite">
        {(count.isPending || (page.isPending && selectors.length > 0)) && <p>Looking up the session&apos;s other leases…</p>}
        {(count.isError || page.isError) && <p role="alert">Could not list the session&apos;s other leases; the server still checks them.</p>}
        {count.data && <p>{sentence(count.data)}</p>}
      </div>
      {routes.length > 0 && (
        <>
          <ul tabIndex={0} aria-label="Leases that would also end" aria-busy={page.isFetching || undefined} className="mt-1 max-h-40 list-disc overflow-auto pl-5 font-mono">
            {routes.map((r) => (
              <li key={r} className="break-all">
                {r}
              </li>
            ))}
          </ul>
          {paged && (
            <div className="mt-1.5 flex flex-wrap items-center justify-between gap-2">
              <p className="tabular-nums">
                {shownFrom + 1}–{shownFrom + routes.length}
                {total !== undefined && ` of ${total.toLocaleString('en-US')}`}
              </p>
              <div className="flex gap-2">
                <Button size="sm" disabled={trail.length === 1 || page.isFetching} onClick={() => setTrail((t) => t.slice(0, -1))}>
                  Previous leases
                </Button>
                <Button size="sm" disabled={next === null || page.isFetching} onClick={() => next && setTrail((t) => [...t, next])}>
                  Next leases
                </Button>
              </div>
            </div>
          )}
        </>
      )}
      {!everywhere && (
        <p className="mt-1 text-amber-700 dark:text-amber-400">
          {beyond
            ? 'You do not administer every one of these routes: the server will refuse to close the session (access_denied) and change nothing.'
            : 'Closing a session needs admin on every route it holds; if it holds leases beyond your grants, the server refuses and changes nothing.'}
        </p>
      )}
    </section>
  );
}
