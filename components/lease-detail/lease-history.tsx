'use client';

import { useQuery } from '@tanstack/react-query';
import { useId, useMemo, useState } from 'react';
import type { AuditEvent, LeaseView } from '@/lib/client';
import { consoleClient } from '@/components/console/client';
import { Panel } from '@/components/lease-detail/detail-list';
import { queryKeys } from '@/components/query-keys';
import { Button } from '@/components/ui/button';
import { cn } from '@/components/ui/cn';
import { ErrorAlert } from '@/components/ui/states';
import { timeZoneName } from '@/components/ui/time';
import { Timestamp } from '@/components/ui/timestamp';
import { useNow } from '@/components/ui/use-now';
import { END_LABELS, TENURE_ENDS, fitView, panView, tenuresOf, zoomView, type Span, type Tenure } from '@/components/lease-detail/lease-history-model';
import { EndSwatch } from '@/components/lease-detail/tenure-look';
import { shownEnd, TenureDescription } from '@/components/lease-detail/tenure-text';
import { TenureTimeline } from '@/components/lease-detail/tenure-timeline';

const WINDOWS = [
  { id: '1h', label: '1 h', ms: 3_600_000 },
  { id: '24h', label: '24 h', ms: 86_400_000 },
  { id: '7d', label: '7 d', ms: 7 * 86_400_000 },
] as const;
type WindowId = (typeof WINDOWS)[number]['id'];

/** At most this many events are read for one window (oldest first, 1,000 a page). */
const MAX_PAGES = 10;

/** The route's audit events in the window, oldest first, along the route's index (a few pages at most). */
function useHistory(route: string, windowId: WindowId, enabled: boolean) {
  return useQuery({
    queryKey: queryKeys.audit({ scope: 'route', route, view: 'history', window: windowId }),
    enabled,
    queryFn: async () => {
      const to = Date.now();
      const from = to - WINDOWS.find((w) => w.id === windowId)!.ms;
      const events: AuditEvent[] = [];
      let cursor: string | undefined;
      let pages = 0;
      do {
        const page = await consoleClient().listAudit({ route, order: 'oldest', since: new Date(from).toISOString(), limit: 1000, cursor });
        events.push(...page.items);
        cursor = page.next_cursor ?? undefined;
      } while (cursor && ++pages < MAX_PAGES);
      return { events, from, to, truncated: cursor !== undefined };
    },
  });
}

/**
 * "Lease history": who held the route over the window read (1 h, 24 h,
 * 7 d), as a timeline that fits the tenures found (zoom and pan from there,
 * Fit to come back), with a "now" line. Each tenure is a bar labelled with
 * owner and token whose colour, pattern and end marker say how it ended;
 * lock-delay gaps are shaded, release requests marked. Hovering or focusing
 * a bar shows its times, how it ended with the operator's reason, the
 * lock-delay, renewals and requests; the list below says the same in text.
 * Every time is the console's 24-hour clock in the operator's zone.
 */
export function LeaseHistory({ route, allowed, current }: { route: string; allowed: boolean; current: LeaseView | null | undefined }) {
  const [windowId, setWindowId] = useState<WindowId>('1h');
  const history = useHistory(route, windowId, allowed);
  const now = useNow();
  const [chosen, setChosen] = useState<{ window: WindowId; view: Span } | null>(null);
  const [hovered, setHovered] = useState<number | null>(null);
  const [focused, setFocused] = useState<number | null>(null);
  const hintId = useId();

  const tenures = useMemo(
    () => (history.data ? tenuresOf(history.data.events, history.data.from, history.data.to, current === undefined ? undefined : current ? { fencing_token: current.fencing_token, renewal_count: current.renewal_count } : null) : []),
    [history.data, current],
  );
  const read: Span = { from: history.data?.from ?? 0, to: Math.max(history.data?.to ?? 1, now) };
  // While the route is held, the fitted view follows now (its bar grows); otherwise it stands still.
  const held = tenures.some((t) => t.endKind === 'held');
  const fitNow = held && now > 0 ? now : (history.data?.to ?? 0);
  const fitted = useMemo(() => fitView(tenures, { from: history.data?.from ?? 0, to: history.data?.to ?? 1 }, fitNow), [tenures, history.data, fitNow]);
  // What was read bounds zoom and pan, with the fitted view's margins beyond it.
  const limit: Span = { from: Math.min(read.from, fitted.from), to: Math.max(read.to, fitted.to) };
  const view = chosen?.window === windowId ? chosen.view : fitted;
  const setView = (v: Span) => setChosen({ window: windowId, view: v });
  const shown = hovered ?? focused;

  const windowPicker = (
    <div role="group" aria-label="History window" className="flex gap-1">
      {WINDOWS.map((w) => (
        <button
          key={w.id}
          type="button"
          aria-pressed={w.id === windowId}
          onClick={() => setWindowId(w.id)}
          className={cn(
            'rounded-md px-2 py-0.5 text-xs font-medium',
            w.id === windowId ? 'bg-zinc-900 text-white dark:bg-zinc-100 dark:text-zinc-900' : 'text-zinc-700 hover:bg-zinc-100 dark:text-zinc-300 dark:hover:bg-zinc-800',
          )}
        >
          {w.label}
        </button>
      ))}
    </div>
  );

  const reveal = (t: Tenure) => {
    const span = view.to - view.from;
    const mid = (t.start + shownEnd(t, now)) / 2;
    setView(panView({ from: mid - span / 2, to: mid + span / 2 }, 0, limit));
  };

  return (
    <Panel title="Lease history" description="Who held this route, for how long, and how each tenure ended (from the audit trail)" actions={allowed ? windowPicker : undefined}>
      {!allowed ? (
        <p className="px-4 py-6 text-sm text-zinc-600 dark:text-zinc-400">The history comes from the audit trail, which needs admin on this route.</p>
      ) : history.error ? (
        <ErrorAlert error={history.error} title="Could not read the history" className="m-4" />
      ) : (
        <figure aria-label="Lease history" className="px-4 py-3">
          <div className="mb-2 flex flex-wrap items-center justify-between gap-2 text-xs text-zinc-600 dark:text-zinc-400">
            <p>
              {history.data ? (
                <>
                  Showing <Timestamp at={view.from} now={now} /> to <Timestamp at={view.to} now={now} /> ({timeZoneName()})
                </>
              ) : (
                'Reading the audit trail…'
              )}
            </p>
            <div role="group" aria-label="Zoom and pan" className="flex gap-1">
              <Button size="sm" variant="ghost" className="h-7 px-2 text-xs" onClick={() => setView(panView(view, -(view.to - view.from) / 4, limit))}>
                ← Earlier
              </Button>
              <Button size="sm" variant="ghost" className="h-7 px-2 text-xs" onClick={() => setView(zoomView(view, 0.5, limit))}>
                Zoom in
              </Button>
              <Button size="sm" variant="ghost" className="h-7 px-2 text-xs" onClick={() => setView(zoomView(view, 2, limit))}>
                Zoom out
              </Button>
              <Button size="sm" variant="ghost" className="h-7 px-2 text-xs" onClick={() => setView(panView(view, (view.to - view.from) / 4, limit))}>
                Later →
              </Button>
              <Button size="sm" variant="ghost" className="h-7 px-2 text-xs" onClick={() => setChosen(null)}>
                Fit
              </Button>
            </div>
          </div>
          <TenureTimeline
            tenures={tenures}
            view={view}
            now={now}
            describedBy={hintId}
            onPan={(ms) => setView(panView(view, ms, limit))}
            onZoom={(factor, at) => setView(zoomView(view, factor, limit, at))}
            onFit={() => setChosen(null)}
            onReveal={reveal}
            onHover={setHovered}
            onFocusTenure={setFocused}
          />
          <p id={hintId} className="sr-only">
            Left and right arrows move between tenures; plus and minus zoom, 0 fits, Shift with an arrow pans.
          </p>
          <p role="status" className={cn('mt-2 min-h-9 rounded-md border px-3 py-2 text-xs', shown !== null && tenures[shown] ? 'border-zinc-200 bg-white text-zinc-800 dark:border-zinc-700 dark:bg-zinc-900 dark:text-zinc-100' : 'border-transparent text-zinc-600 dark:text-zinc-400')}>
            {shown !== null && tenures[shown] ? <TenureDescription tenure={tenures[shown]!} now={now} /> : 'Point at or focus a tenure for its times, how it ended and why. Drag to pan; Ctrl+wheel zooms.'}
          </p>
          <figcaption className="mt-2 text-xs text-zinc-600 dark:text-zinc-400">
            {history.isPending ? 'Reading the audit trail…' : tenures.length === 0 ? 'Nobody held this route in this window.' : `${tenures.length} tenure${tenures.length === 1 ? '' : 's'}; shaded: lock-delay; ▼ marks a release request.`}
            {history.data?.truncated && ' Only the oldest 10,000 events of this window are shown.'}
            <span className="mt-1 flex flex-wrap gap-x-4 gap-y-1">
              {TENURE_ENDS.map((k) => (
                <span key={k} className="inline-flex items-center gap-2">
                  <EndSwatch end={k} />
                  {END_LABELS[k]}
                </span>
              ))}
            </span>
          </figcaption>
          <ol aria-label="Tenures" className="mt-2 space-y-0.5 text-xs text-zinc-700 dark:text-zinc-300">
            {tenures.map((t) => (
              <li key={`${t.fencingToken}-${t.start}`} data-end={t.endKind}>
                <TenureDescription tenure={t} now={now} />
              </li>
            ))}
          </ol>
        </figure>
      )}
    </Panel>
  );
}
