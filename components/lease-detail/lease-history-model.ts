/**
 * The route's tenures over a window, derived from its audit events read
 * oldest first (GET /api/v1/audit?order=oldest): one bar per holder, how and
 * when it ended, the operator's reason, the lock-delay its end started, its
 * renewals and the release requests made while it held. A single renew is
 * an event on the route; batched renewals are not (one event per call), so
 * a tenure's renewals are also read from its end event's
 * `details.renewal_count` and, while held, from the lease itself.
 *
 * Every end of a lease is an event on its route (docs/design.md "Audit"):
 * a release, a force-release or revoke (with the operator's reason), an
 * expiry (`lease_expire`, at its deadline), or its session's end
 * (`lease_release` with result `session_closed`, `lease_expire` with
 * `session_expired`). So a tenure's end is read, never guessed, and it does
 * not move when the page is read again. A tenure whose end has no event
 * (written before the server recorded session ends, or lost with the last
 * audit batch of a crash) is `unknown`: drawn to the last moment the trail
 * saw it, and said to be so.
 */

import type { AuditEvent } from '@/lib/client';
import { ENDING_KINDS, type EndingKind } from '@/lib/wire';

/** A change kind that ends a tenure the trail shows (a rolled-back grant never held). */
type TrailEnd = Exclude<EndingKind, 'rolled_back'>;

/** How a tenure ended: one of the wire's change kinds (lib/wire), still held, or not recorded. */
export type TenureEnd = TrailEnd | 'held' | 'unknown';

/** Every TenureEnd, in the legend's order. */
export const TENURE_ENDS: readonly TenureEnd[] = [...ENDING_KINDS.filter((k): k is TrailEnd => k !== 'rolled_back'), 'held', 'unknown'];

export interface Tenure {
  ownerId: string;
  fencingToken: number | null;
  /** Epoch ms; the window's start when it began before the window. */
  start: number;
  /** When it ended (`held`: when the trail was read; `unknown`: the last moment the trail saw it). */
  end: number;
  startedBefore: boolean;
  endKind: TenureEnd;
  /** For `session_closed`: whether the session was closed or expired. */
  sessionEnd?: 'closed' | 'expired';
  /** The operator's reason (force-release, revoke), verbatim. */
  reason: string | null;
  /** The token that ended it (an operator's), when one did. */
  endedBy: string | null;
  /** The lock-delay its end started (epoch ms): nobody could acquire the route before it. */
  lockDelayUntil: number | null;
  renewals: number;
  requests: Array<{ time: number; reason: string }>;
}

export const END_LABELS: Record<TenureEnd, string> = {
  released: 'released',
  expired: 'expired',
  session_closed: 'session closed',
  force_released: 'force-released',
  revoked: 'revoked',
  held: 'still held',
  unknown: 'end not recorded',
};

/** How each kind of end reads, for a tenure (a session's end says whether it was closed or expired). */
export function endLabel(t: Pick<Tenure, 'endKind' | 'sessionEnd'>): string {
  return t.endKind === 'session_closed' && t.sessionEnd === 'expired' ? 'session expired' : END_LABELS[t.endKind];
}

/** The events that end a lease: (event type, result) → how it ended. */
const ENDS: Record<string, { kind: TenureEnd; sessionEnd?: 'closed' | 'expired' }> = {
  'lease_release/lease_released': { kind: 'released' },
  'lease_release/session_closed': { kind: 'session_closed', sessionEnd: 'closed' },
  'lease_expire/lease_expired': { kind: 'expired' },
  'lease_expire/session_expired': { kind: 'session_closed', sessionEnd: 'expired' },
  'lease_force_release/lease_force_released': { kind: 'force_released' },
  'lease_revoke/lease_revoked': { kind: 'revoked' },
};

function lockDelayOf(e: AuditEvent): number | null {
  const v = e.details?.lock_delay_until;
  const t = typeof v === 'string' ? Date.parse(v) : NaN;
  return Number.isNaN(t) ? null : t;
}

/**
 * Tenures from events oldest first, read over [from, to). The tenure still
 * open at the end is `held` if the route's current lease has its token
 * (`heldNow`; undefined while the lease is still being read counts as held),
 * else `unknown`. So is one superseded by a newer token with no end of its
 * own in between.
 */
export function tenuresOf(events: readonly AuditEvent[], from: number, to: number, heldNow: { fencing_token: number; renewal_count?: number } | null | undefined): Tenure[] {
  const out: Tenure[] = [];
  let open: Tenure | undefined;
  let lastSeen = from;
  const close = (kind: TenureEnd, at: number, e?: AuditEvent, sessionEnd?: 'closed' | 'expired') => {
    if (!open) return;
    open.end = Math.max(open.start, at);
    open.endKind = kind;
    if (sessionEnd) open.sessionEnd = sessionEnd;
    if (e) {
      // Batched renewals are not on the route: the end says how many there were (docs/design.md "Audit").
      const n = e.details?.renewal_count;
      if (typeof n === 'number') open.renewals = Math.max(open.renewals, n);
      open.reason = e.reason;
      open.endedBy = e.token_id;
      open.lockDelayUntil = lockDelayOf(e);
    }
    out.push(open);
    open = undefined;
  };
  const begin = (e: AuditEvent, at: number, before: boolean) => {
    open = {
      ownerId: e.owner_id ?? '?',
      fencingToken: e.fencing_token,
      start: at,
      end: at,
      startedBefore: before,
      endKind: 'held',
      reason: null,
      endedBy: null,
      lockDelayUntil: null,
      renewals: 0,
      requests: [],
    };
    lastSeen = at;
  };
  for (const e of events) {
    const t = Date.parse(e.time);
    if (e.event_type === 'lease_acquire' && e.result === 'lease_acquired') {
      // A new holder while one is open: the open one's end is not in the trail.
      close('unknown', lastSeen);
      begin(e, t, false);
      continue;
    }
    const end = ENDS[`${e.event_type}/${e.result}`];
    if (!end && e.result !== 'lease_renewed' && e.result !== 'release_requested' && e.result !== 'checkpoint_written') continue;
    if (e.fencing_token === null) continue;
    if (open && open.fencingToken !== e.fencing_token) close('unknown', lastSeen);
    // No acquire seen: the tenure began before the window (or its acquire was pruned).
    if (!open) begin(e, out.length ? t : from, out.length === 0);
    lastSeen = t;
    if (e.result === 'lease_renewed') open!.renewals++;
    else if (e.result === 'release_requested') open!.requests.push({ time: t, reason: e.reason ?? '' });
    else if (end) close(end.kind, t, e, end.sessionEnd);
  }
  if (open) {
    const current = heldNow === undefined || heldNow?.fencing_token === (open as Tenure).fencingToken;
    if (current) {
      (open as Tenure).end = Math.max((open as Tenure).start, to);
      if (typeof heldNow?.renewal_count === 'number') (open as Tenure).renewals = Math.max((open as Tenure).renewals, heldNow.renewal_count);
      out.push(open);
    } else close('unknown', lastSeen);
  }
  return out;
}

export interface Span {
  from: number;
  to: number;
}

/** The narrowest view: a second. */
const MIN_SPAN_MS = 1_000;

/**
 * The view that fits the tenures (not the window read): from the first
 * start to the last end, lock-delay or request, and to `now` while the route
 * is held, with a little room on each side (at least 10 s shown). The whole
 * window read when there is nothing to fit.
 */
export function fitView(tenures: readonly Tenure[], read: Span, now: number): Span {
  if (tenures.length === 0) return { from: read.from, to: Math.max(read.to, now) };
  let lo = Infinity;
  let hi = -Infinity;
  for (const t of tenures) {
    lo = Math.min(lo, t.start);
    hi = Math.max(hi, t.endKind === 'held' ? Math.max(t.end, now) : t.end, t.lockDelayUntil ?? -Infinity, ...t.requests.map((r) => r.time));
  }
  const span = Math.max(hi - lo, 10_000);
  const mid = (lo + hi) / 2;
  const half = (span / 2) * 1.08;
  return { from: Math.round(mid - half), to: Math.round(mid + half) };
}

/** `view` zoomed by `factor` (below 1: in) around `at` (default its middle), never narrower than a second nor wider than `limit`. */
export function zoomView(view: Span, factor: number, limit: Span, at = (view.from + view.to) / 2): Span {
  const widest = limit.to - limit.from;
  const span = Math.min(widest, Math.max(MIN_SPAN_MS, (view.to - view.from) * factor));
  const ratio = (at - view.from) / (view.to - view.from || 1);
  const from = at - span * ratio;
  return clampView({ from, to: from + span }, limit);
}

/** `view` moved by `ms` (negative: earlier), kept inside `limit`. */
export function panView(view: Span, ms: number, limit: Span): Span {
  return clampView({ from: view.from + ms, to: view.to + ms }, limit);
}

function clampView(v: Span, limit: Span): Span {
  const span = Math.min(v.to - v.from, limit.to - limit.from);
  let from = Math.max(limit.from, Math.min(v.from, limit.to - span));
  from = Math.round(from);
  return { from, to: Math.round(from + span) };
}
