/** The read-only views of leases and sessions the API shows (docs/semantics.md "The wire"). */

import type { HeldLease as WireHeldLease, LeaseView as WireLeaseView, Metadata, ReleaseRequest, SessionView as WireSessionView } from '@/lib/wire';
import type { LeaseRow, SessionRow } from '../../store/types';

/** The views as they travel, declared once in lib/wire; the engine builds them field by field. */
type Writable<T> = { -readonly [K in keyof T]: T[K] };
export type { Metadata };
export type LeaseView = Writable<WireLeaseView>;
/** What the holder gets back: a LeaseView plus its lease_id. */
export type HeldLease = Writable<WireHeldLease>;
export type SessionView = Writable<WireSessionView>;
/** What a lease view carries while a request is pending (docs/release-requests.md). */
export type ReleaseRequestView = Writable<ReleaseRequest>;

/** Any JSON value (a checkpoint's value, stored as its text). */
export type Json = string | number | boolean | null | Json[] | { [key: string]: Json };

const DAY_MS = 86_400_000;
/** Past 9999-12-31: `toISOString` switches to six-digit years there. */
const ISO_END = 253_402_300_800_000;
let isoDay = -1;
let isoDate = '';
const pad2 = (n: number) => (n < 10 ? `0${n}` : `${n}`);
const pad3 = (n: number) => (n < 10 ? `00${n}` : n < 100 ? `0${n}` : `${n}`);

/**
 * `new Date(ms).toISOString()`, about 20 times cheaper: the date part is
 * kept for the last day seen, the time of day is arithmetic. A LIST page
 * formats four of these per lease (docs/benchmarks.md, bench:list).
 */
export function iso(ms: number): string {
  if (!Number.isInteger(ms) || ms < 0 || ms >= ISO_END) return new Date(ms).toISOString();
  const day = Math.floor(ms / DAY_MS);
  if (day !== isoDay) {
    isoDay = day;
    isoDate = new Date(day * DAY_MS).toISOString().slice(0, 11);
  }
  let r = ms - day * DAY_MS;
  const h = Math.floor(r / 3_600_000);
  r -= h * 3_600_000;
  const m = Math.floor(r / 60_000);
  r -= m * 60_000;
  const s = Math.floor(r / 1000);
  return `${isoDate}${pad2(h)}:${pad2(m)}:${pad2(s)}.${pad3(r - s * 1000)}Z`;
}

export function leaseView(row: LeaseRow, now: number, waiters: number): LeaseView {
  return {
    route: row.route,
    owner_id: row.ownerId,
    holder_incarnation: row.incarnation,
    fencing_token: row.fencingToken,
    acquired_at: iso(row.acquiredAt),
    renewed_at: iso(row.renewedAt),
    expires_at: iso(row.expiresAt),
    max_expires_at: iso(row.maxExpiresAt),
    ttl_ms: row.ttlMs,
    remaining_ms: Math.max(0, row.expiresAt - now),
    renewal_count: row.renewalCount,
    revision: row.revision,
    metadata: row.metadata === null ? null : (JSON.parse(row.metadata) as Metadata),
    waiters,
    release_request: releaseRequestOf(row),
  };
}

/** leaseView's fields, in its order, then `lease_id`: the view itself extended (a spread of it cost a second object per acquire). */
export function heldLease(row: LeaseRow, now: number, waiters: number): HeldLease {
  const view = leaseView(row, now, waiters) as HeldLease;
  view.lease_id = row.leaseId;
  return view;
}

const quote = JSON.stringify;

/**
 * `JSON.stringify(view)` of a `heldLease`, written out in its field order:
 * about half the cost of the generic serializer, which a batched renewal
 * paid for each of its leases (docs/benchmarks.md "Wave 3, fifteenth
 * session"). views.test.ts holds the two to the same text. The ISO times
 * are `iso`'s, which never need escaping; the numbers are finite integers.
 */
export function heldLeaseJson(v: HeldLease): string {
  return (
    `{"route":${quote(v.route)},"owner_id":${quote(v.owner_id)},"holder_incarnation":${quote(v.holder_incarnation)},"fencing_token":${v.fencing_token},` +
    `"acquired_at":"${v.acquired_at}","renewed_at":"${v.renewed_at}","expires_at":"${v.expires_at}","max_expires_at":"${v.max_expires_at}",` +
    `"ttl_ms":${v.ttl_ms},"remaining_ms":${v.remaining_ms},"renewal_count":${v.renewal_count},"revision":${v.revision},` +
    `"metadata":${v.metadata === null ? 'null' : quote(v.metadata)},"waiters":${v.waiters},` +
    `"release_request":${v.release_request === null ? 'null' : quote(v.release_request)},"lease_id":${quote(v.lease_id)}}`
  );
}

/** A session's last batched calls as stored (SessionRow.batches): epoch ms and counts. */
export interface SessionBatches {
  renew?: { at: number; renewed: number; lost: number };
  acquire?: { at: number; acquired: number };
}

/** The sessions list's item: a SessionView plus the session's last batched calls (CONTRACT §20). */
export interface ListedSession extends SessionView {
  /** The last `POST /sessions/renew`: when, how many items were renewed and how many lost; null before the first. */
  last_batch_renewal: { at: string; renewed: number; lost: number } | null;
  /** The last `POST /sessions/acquire` that acquired (a refusal changes nothing): when and how many leases; null before the first. */
  last_batch_acquire: { at: string; acquired: number } | null;
}

/** A session's stored batches (JSON text, or nothing yet). */
export function sessionBatches(row: SessionRow): SessionBatches {
  return row.batches ? (JSON.parse(row.batches) as SessionBatches) : {};
}

export function listedSession(row: SessionRow, leaseCount: number): ListedSession {
  const b = sessionBatches(row);
  return {
    ...sessionView(row, leaseCount),
    last_batch_renewal: b.renew ? { at: iso(b.renew.at), renewed: b.renew.renewed, lost: b.renew.lost } : null,
    last_batch_acquire: b.acquire ? { at: iso(b.acquire.at), acquired: b.acquire.acquired } : null,
  };
}

export function sessionView(row: SessionRow, leaseCount: number): SessionView {
  return {
    holder_incarnation: row.incarnation,
    owner_id: row.ownerId,
    ttl_ms: row.ttlMs,
    created_at: iso(row.createdAt),
    expires_at: iso(row.expiresAt),
    lease_count: leaseCount,
  };
}

/** A release request as stored in the lease row (`release_request`, JSON text). */
export interface StoredReleaseRequest {
  at: number;
  reason: string;
  token_id: string;
}

/** The pending request of a lease row (docs/release-requests.md), or null. */
export function releaseRequestOf(row: LeaseRow): ReleaseRequestView | null {
  if (!row.releaseRequest) return null;
  const r = JSON.parse(row.releaseRequest) as StoredReleaseRequest;
  return { requested_at: iso(r.at), reason: r.reason, token_id: r.token_id };
}

