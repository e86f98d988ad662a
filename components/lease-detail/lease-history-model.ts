/**
 * The route's tenures over a window, derived from its audit events read
 * oldest first (GET /api/v1/audit?order=oldest): one bar per holder, how it
 * ended, its renewals and the release requests made while it held.
 */

import type { AuditEvent } from '@/lib/client';

export type TenureEnd = 'released' | 'expired' | 'session_closed' | 'force_released' | 'revoked' | 'held';

export interface Tenure {
  ownerId: string;
  fencingToken: number | null;
  /** Epoch ms; the window's start when it began before the window. */
  start: number;
  end: number;
  startedBefore: boolean;
  endKind: TenureEnd;
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
};

const ENDS: Record<string, TenureEnd> = {
  lease_released: 'released',
  lease_expired: 'expired',
  lease_force_released: 'force_released',
  lease_revoked: 'revoked',
};

/**
 * Tenures from events oldest first, within [from, to). A tenure whose end
 * has no event of its own on the route (its session was closed or expired:
 * those are session events) ends when the next one starts, as
 * `session_closed`; the last one is `held` when the route is held now.
 */
export function tenuresOf(events: readonly AuditEvent[], from: number, to: number, heldNow: { fencing_token: number } | null): Tenure[] {
  const out: Tenure[] = [];
  let open: Tenure | undefined;
  const close = (kind: TenureEnd, at: number) => {
    if (!open) return;
    open.end = at;
    open.endKind = kind;
    out.push(open);
    open = undefined;
  };
  const begin = (e: AuditEvent, at: number, before: boolean) => {
    open = { ownerId: e.owner_id ?? '?', fencingToken: e.fencing_token, start: at, end: to, startedBefore: before, endKind: 'held', renewals: 0, requests: [] };
  };
  for (const e of events) {
    const t = Date.parse(e.time);
    if (e.event_type === 'lease_acquire' && e.result === 'lease_acquired') {
      close('session_closed', t);
      begin(e, t, false);
      continue;
    }
    const endKind = ENDS[e.result];
    if (!endKind && e.result !== 'lease_renewed' && e.result !== 'release_requested') continue;
    if (e.fencing_token === null) continue;
    if (open && open.fencingToken !== e.fencing_token) close('session_closed', t);
    // No acquire seen: the tenure began before the window (or its acquire was pruned).
    if (!open) begin(e, out.length ? t : from, out.length === 0);
    if (e.result === 'lease_renewed') open!.renewals++;
    else if (e.result === 'release_requested') open!.requests.push({ time: t, reason: e.reason ?? '' });
    else close(endKind!, t);
  }
  if (open) {
    const current = heldNow && heldNow.fencing_token === (open as Tenure).fencingToken;
    if (current) out.push(open);
    else close('session_closed', to);
  }
  return out;
}
