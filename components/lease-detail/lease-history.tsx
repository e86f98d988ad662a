'use client';

import { useQuery } from '@tanstack/react-query';
import { useMemo, useState } from 'react';
import { createPortal } from 'react-dom';
import type uPlot from 'uplot';
import type { AuditEvent, LeaseView } from '@/lib/client';
import { consoleClient } from '@/components/console/client';
import { Panel } from '@/components/lease-detail/detail-list';
import { chartTheme } from '@/components/metrics/chart-theme';
import { UPlotChart, type PlotOptions } from '@/components/metrics/uplot-chart';
import { queryKeys } from '@/components/query-keys';
import { cn } from '@/components/ui/cn';
import { ErrorAlert } from '@/components/ui/states';
import { useDarkMode } from '@/components/ui/use-dark-mode';
import { END_LABELS, tenuresOf, type Tenure, type TenureEnd } from '@/components/lease-detail/lease-history-model';

const WINDOWS = [
  { id: '1h', label: '1 h', ms: 3_600_000 },
  { id: '24h', label: '24 h', ms: 86_400_000 },
  { id: '7d', label: '7 d', ms: 7 * 86_400_000 },
] as const;
type WindowId = (typeof WINDOWS)[number]['id'];

/** At most this many events are read for one window (oldest first, 1,000 a page). */
const MAX_PAGES = 10;
const FONT = '11px ui-sans-serif, system-ui, sans-serif';
const HEIGHT = 96;

/** Bar colours by how the tenure ended (canvas: light, dark). */
const END_COLORS: Record<TenureEnd, [string, string]> = {
  released: ['#0f766e', '#2dd4bf'],
  expired: ['#b45309', '#fbbf24'],
  session_closed: ['#4f46e5', '#a5b4fc'],
  force_released: ['#c2410c', '#fb923c'],
  revoked: ['#b91c1c', '#f87171'],
  held: ['#15803d', '#4ade80'],
};

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

const fmt = (ms: number) => new Date(ms).toLocaleString(undefined, { month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit', second: '2-digit' });
const duration = (ms: number) => {
  const s = Math.round(ms / 1000);
  return s < 60 ? `${s}s` : s < 3600 ? `${Math.floor(s / 60)}m ${s % 60}s` : `${Math.floor(s / 3600)}h ${Math.floor((s % 3600) / 60)}m`;
};

function describe(t: Tenure): string {
  const parts = [
    `${t.ownerId}, token ${t.fencingToken ?? '?'}`,
    `${t.startedBefore ? 'held before ' : 'from '}${fmt(t.start)} ${t.endKind === 'held' ? 'until now' : `to ${fmt(t.end)}`} (${duration(t.end - t.start)})`,
    END_LABELS[t.endKind],
    `${t.renewals} renewal${t.renewals === 1 ? '' : 's'}`,
  ];
  for (const r of t.requests) parts.push(`release requested at ${fmt(r.time)}: “${r.reason}”`);
  return parts.join('; ');
}

interface Placed {
  over: HTMLElement;
  bars: Array<{ left: number; width: number }>;
}

/**
 * "Lease history": the route's tenures over 1 h, 24 h or 7 d as a timeline
 * (uPlot scales and axis; the bars drawn in its draw hook), one bar per
 * holder labelled with owner and token, coloured by how it ended, release
 * requests marked. Each bar is also a focusable button (hover or focus shows
 * its times, renewals and reasons), and a list below says the same in text.
 */
export function LeaseHistory({ route, allowed, current }: { route: string; allowed: boolean; current: LeaseView | null | undefined }) {
  const [windowId, setWindowId] = useState<WindowId>('1h');
  const history = useHistory(route, windowId, allowed);
  const dark = useDarkMode();
  const [placed, setPlaced] = useState<Placed | null>(null);
  const [shown, setShown] = useState<number | null>(null);

  const tenures = useMemo(
    () => (history.data ? tenuresOf(history.data.events, history.data.from, history.data.to, current ? { fencing_token: current.fencing_token } : null) : []),
    [history.data, current],
  );
  const from = history.data?.from ?? 0;
  const to = history.data?.to ?? 1;

  const options = useMemo<PlotOptions>(() => {
    const theme = chartTheme(dark);
    const axis: uPlot.Axis = { stroke: theme.axis, font: FONT, grid: { stroke: theme.grid, width: 1 }, ticks: { stroke: theme.grid, width: 1, size: 4 } };
    return {
      ms: 1,
      legend: { show: false },
      cursor: { show: false },
      padding: [8, 32, 0, 8],
      scales: { x: { time: true, range: () => [from, to] }, y: { range: () => [0, 1] } },
      axes: [{ ...axis, space: 70 }, { show: false }],
      series: [{}, { show: false }],
      hooks: {
        draw: [
          (u) => {
            const ctx = u.ctx;
            const px = devicePixelRatio;
            const top = u.bbox.top + 10 * px;
            const h = u.bbox.height - 20 * px;
            const bars: Placed['bars'] = [];
            ctx.save();
            ctx.font = `${11 * px}px ui-sans-serif, system-ui, sans-serif`;
            ctx.textBaseline = 'middle';
            for (const t of tenures) {
              const x0 = u.valToPos(t.start, 'x', true);
              const x1 = Math.max(x0 + 2 * px, u.valToPos(t.end, 'x', true));
              ctx.fillStyle = END_COLORS[t.endKind][dark ? 1 : 0];
              ctx.fillRect(x0, top, x1 - x0, h);
              const label = `${t.ownerId} · ${t.fencingToken ?? '?'}`;
              if (ctx.measureText(label).width + 8 * px < x1 - x0) {
                ctx.fillStyle = dark ? '#09090b' : '#ffffff';
                ctx.fillText(label, x0 + 4 * px, top + h / 2);
              }
              ctx.fillStyle = dark ? '#fafafa' : '#18181b';
              for (const r of t.requests) {
                const x = u.valToPos(r.time, 'x', true);
                ctx.beginPath();
                ctx.moveTo(x - 5 * px, top - 8 * px);
                ctx.lineTo(x + 5 * px, top - 8 * px);
                ctx.lineTo(x, top);
                ctx.fill();
              }
              bars.push({ left: u.valToPos(t.start, 'x'), width: Math.max(2, u.valToPos(t.end, 'x') - u.valToPos(t.start, 'x')) });
            }
            ctx.restore();
            setPlaced({ over: u.over, bars });
          },
        ],
      },
    };
  }, [dark, tenures, from, to]);
  const data = useMemo(() => [[from, to], [null, null]] as unknown as uPlot.AlignedData, [from, to]);

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

  return (
    <Panel title="Lease history" description="Who held this route, for how long, and how each tenure ended (from the audit trail)" actions={allowed ? windowPicker : undefined}>
      {!allowed ? (
        <p className="px-4 py-6 text-sm text-zinc-600 dark:text-zinc-400">The history comes from the audit trail, which needs admin on this route.</p>
      ) : history.error ? (
        <ErrorAlert error={history.error} title="Could not read the history" className="m-4" />
      ) : (
        <figure aria-label="Lease history" className="px-4 py-3">
          <div className="relative">
            <UPlotChart options={options} data={data} height={HEIGHT} label={`Timeline of ${tenures.length} tenures; the list below describes each`} />
            {placed &&
              createPortal(
                tenures.map((t, i) => {
                  const b = placed.bars[i];
                  if (!b) return null;
                  return (
                    <button
                      key={`${t.fencingToken}-${t.start}`}
                      type="button"
                      aria-label={describe(t)}
                      data-end={t.endKind}
                      onFocus={() => setShown(i)}
                      onBlur={() => setShown((s) => (s === i ? null : s))}
                      onMouseEnter={() => setShown(i)}
                      onMouseLeave={() => setShown((s) => (s === i ? null : s))}
                      className="absolute top-[10px] bottom-[10px] rounded-sm outline-offset-2 focus-visible:outline-2 focus-visible:outline-zinc-900 dark:focus-visible:outline-zinc-100"
                      style={{ left: b.left, width: b.width }}
                    />
                  );
                }),
                placed.over,
              )}
          </div>
          {shown !== null && tenures[shown] && (
            <p role="status" className="mt-2 rounded-md border border-zinc-200 bg-white px-3 py-2 text-xs text-zinc-800 dark:border-zinc-700 dark:bg-zinc-900 dark:text-zinc-100">
              {describe(tenures[shown]!)}
            </p>
          )}
          <figcaption className="mt-2 text-xs text-zinc-600 dark:text-zinc-400">
            {history.isPending ? 'Reading the audit trail…' : tenures.length === 0 ? 'Nobody held this route in this window.' : `${tenures.length} tenure${tenures.length === 1 ? '' : 's'}; ▼ marks a release request.`}
            {history.data?.truncated && ' Only the oldest 10,000 events of this window are shown.'}
            <span className="ml-2 inline-flex flex-wrap gap-x-3">
              {(Object.keys(END_LABELS) as TenureEnd[]).map((k) => (
                <span key={k} className="inline-flex items-center gap-1">
                  <span aria-hidden="true" className="inline-block size-2.5 rounded-sm" style={{ background: END_COLORS[k][dark ? 1 : 0] }} />
                  {END_LABELS[k]}
                </span>
              ))}
            </span>
          </figcaption>
          <ol aria-label="Tenures" className="mt-2 space-y-0.5 text-xs text-zinc-700 dark:text-zinc-300">
            {tenures.map((t) => (
              <li key={`${t.fencingToken}-${t.start}`}>{describe(t)}</li>
            ))}
          </ol>
        </figure>
      )}
    </Panel>
  );
}
