'use client';

import { useEffect, useId, useMemo, useReducer, type ReactElement } from 'react';
import { LeaseholdClient, type LeaseView, type ObserverState } from '../client';
import { useLeaseholdClient } from './provider';
import { useLeaseInventory, type LeaseInventory } from './use-lease-inventory';

export interface InventoryWidgetProps {
  /** The leases to show, e.g. `lease://acme/renderers/*`. */
  selector: string;
  /** The client to observe with. Without one: `baseUrl`/`token` if given, else the nearest `<LeaseholdProvider>`, else the page's own origin with the console's cookie. */
  client?: LeaseholdClient | undefined;
  /** The Leasehold server's origin, for a widget on another origin (the server must list the page's origin in `LEASEHOLD_CORS_ORIGINS`). */
  baseUrl?: string | undefined;
  /** A bearer token, normally a read-only embed token for `selector`. */
  token?: string | undefined;
  /** The heading, which also names the table (default `Inventory`). */
  title?: string | undefined;
  /** Force a colour scheme; by default the widget follows `prefers-color-scheme` (or `data-theme` on the document's root). */
  theme?: 'light' | 'dark' | undefined;
  className?: string | undefined;
}

/**
 * A live, read-only table of the leases matching `selector`: route, owner,
 * fencing token and a countdown to expiry, with the observer's state in a
 * polite live region. It offers no actions. Style it by importing
 * `widget.css` (`leasehold/widget.css`); it needs no other CSS.
 */
export function InventoryWidget({ selector, client, baseUrl, token, title, theme, className }: InventoryWidgetProps): ReactElement {
  const fromContext = useLeaseholdClient();
  const ownNeeded = client === undefined && (baseUrl !== undefined || token !== undefined || fromContext === undefined);
  // Creating a client opens nothing, so a render may do it; it is kept per (baseUrl, token).
  const own = useMemo(() => (ownNeeded ? new LeaseholdClient({ baseUrl, token }) : undefined), [ownNeeded, baseUrl, token]);
  const inventory = useLeaseInventory(selector, { client: client ?? own ?? fromContext, renewals: true });
  useSecondTick(inventory.items.length > 0);
  return <InventoryWidgetView selector={selector} inventory={inventory} now={Date.now()} title={title} theme={theme} className={className} />;
}

/** Re-render every second while `active`, so countdowns move. */
function useSecondTick(active: boolean): void {
  const [, tick] = useReducer((n: number) => n + 1, 0);
  useEffect(() => {
    if (!active) return;
    const timer = setInterval(tick, 1000);
    return () => clearInterval(timer);
  }, [active]);
}

export interface InventoryWidgetViewProps extends Pick<InventoryWidgetProps, 'selector' | 'title' | 'theme' | 'className'> {
  inventory: LeaseInventory;
  /** Epoch milliseconds the countdowns are measured from. */
  now: number;
}

type Tone = 'pending' | 'ok' | 'warn' | 'down' | 'off';

const STATUS: Record<ObserverState, { tone: Tone; text: string }> = {
  connecting: { tone: 'pending', text: 'Connecting…' },
  ready: { tone: 'ok', text: 'Live' },
  resyncing: { tone: 'warn', text: 'Reconnecting, showing last known' },
  error: { tone: 'down', text: 'Error' },
  closed: { tone: 'off', text: 'Closed, not updating' },
};

const EMPTY: Record<ObserverState, string> = {
  connecting: 'Loading leases…',
  ready: 'No leases held.',
  resyncing: 'No leases were held when the connection dropped.',
  error: 'The leases could not be read.',
  closed: 'Not updating: the observer was closed.',
};

/** Refusals of the token itself: the table says so instead of looking empty. */
const REFUSED = new Set(['invalid_credential', 'access_denied']);

function emptyText(state: ObserverState, error: { code: string } | undefined): string {
  if (state === 'error' && error && REFUSED.has(error.code)) return 'This widget’s token was refused: it may not read these leases (expired, revoked or without a read grant).';
  return EMPTY[state];
}

/** The widget's markup for a given inventory and time: pure, so it renders the same on a server and in tests. */
export function InventoryWidgetView({ selector, inventory, now, title = 'Inventory', theme, className }: InventoryWidgetViewProps): ReactElement {
  const titleId = useId();
  const { state, items, error, stale } = inventory;
  const status = STATUS[state];
  const counted = state !== 'connecting' && !(state === 'error' && items.length === 0);
  return (
    <section
      className={className ? `lh-widget ${className}` : 'lh-widget'}
      data-theme={theme}
      data-state={state}
      aria-labelledby={titleId}
    >
      <header className="lh-header">
        <div className="lh-heading">
          <h2 id={titleId} className="lh-title">
            {title}
          </h2>
          <p className="lh-selector">
            <code>{selector}</code>
          </p>
        </div>
        {counted && (
          <p className="lh-count">
            <span className="lh-count-n">{items.length}</span> held{stale && <span className="lh-count-note"> (last known)</span>}
          </p>
        )}
      </header>
      <div className="lh-scroll">
        <table className="lh-table" aria-labelledby={titleId} aria-busy={state === 'connecting' || undefined}>
          <thead>
            <tr>
              <th scope="col">Route</th>
              <th scope="col">Owner</th>
              <th scope="col" className="lh-num">
                Fencing token
              </th>
              <th scope="col" className="lh-num">
                Expires in
              </th>
            </tr>
          </thead>
          <tbody data-stale={stale || undefined}>
            {items.length === 0 ? (
              <tr className="lh-empty">
                <td colSpan={4}>{emptyText(state, error)}</td>
              </tr>
            ) : (
              items.map((lease) => <LeaseRow key={lease.route} lease={lease} now={now} />)
            )}
          </tbody>
        </table>
      </div>
      <footer className="lh-footer">
        <p className="lh-status" data-tone={status.tone} role="status" aria-live="polite">
          <span className="lh-dot" aria-hidden="true" />
          <span>
            {state === 'error' ? `Error: ${error?.message ?? 'the observer stopped'}` : status.text}
            {state === 'error' && error?.correlationId && (
              <span className="lh-status-detail">
                {' '}
                (correlation id <code>{error.correlationId}</code>)
              </span>
            )}
          </span>
        </p>
      </footer>
    </section>
  );
}

function LeaseRow({ lease, now }: { lease: LeaseView; now: number }): ReactElement {
  const slash = lease.route.lastIndexOf('/');
  const remainingMs = Math.max(0, Date.parse(lease.expires_at) - now);
  return (
    <tr>
      {/* Focusable, so a keyboard reader can unfold a truncated route (widget.css); the title shows it on hover. */}
      <th scope="row" className="lh-route" title={lease.route} tabIndex={0}>
        <span className="lh-route-base">{lease.route.slice(0, slash + 1)}</span>
        <span className="lh-route-resource">{lease.route.slice(slash + 1)}</span>
      </th>
      <td className="lh-owner" title={lease.owner_id}>
        {lease.owner_id}
      </td>
      <td className="lh-num lh-token" data-label="Token">
        {lease.fencing_token}
      </td>
      <td className="lh-num lh-expiry" data-label="Expires in" data-soon={remainingMs < 5_000 || undefined}>
        <time dateTime={lease.expires_at}>{formatCountdown(remainingMs)}</time>
      </td>
    </tr>
  );
}

/** `42s`, `4m 05s`, `2h 03m`: whole seconds, rounded up, never negative; `—` for an unreadable time. */
export function formatCountdown(ms: number): string {
  if (Number.isNaN(ms)) return '—';
  const total = Math.max(0, Math.ceil(ms / 1000));
  if (total < 60) return `${total}s`;
  const minutes = Math.floor(total / 60);
  if (minutes < 60) return `${minutes}m ${pad(total % 60)}s`;
  return `${Math.floor(minutes / 60)}h ${pad(minutes % 60)}m`;
}

function pad(n: number): string {
  return n < 10 ? `0${n}` : String(n);
}
