/**
 * The API's views of leases and sessions, exactly as they travel
 * (docs/semantics.md "The wire"), declared once: the SDK hands them over
 * unchanged, the console shows them, and the server's answer schemas
 * (server/http/answers.ts) are checked against them at compile time.
 */

export type Metadata = Record<string, string | number | boolean>;

/** A request that the holder release its lease; the newest replaces an earlier one. */
export interface ReleaseRequest {
  readonly requested_at: string;
  readonly reason: string;
  /** The token that asked. */
  readonly token_id: string;
}

/** What observers see of a held lease: no session id, no lease id. */
export interface LeaseView {
  readonly route: string;
  readonly owner_id: string;
  readonly holder_incarnation: string;
  readonly fencing_token: number;
  readonly acquired_at: string;
  readonly renewed_at: string;
  readonly expires_at: string;
  readonly max_expires_at: string;
  readonly ttl_ms: number;
  readonly remaining_ms: number;
  readonly renewal_count: number;
  /** The revision of the change that created this lease. */
  readonly revision: number;
  readonly metadata: Readonly<Metadata> | null;
  readonly waiters: number;
  /** The pending request that the holder release this lease (docs/release-requests.md), or null. */
  readonly release_request: ReleaseRequest | null;
}

/** What the holder gets back from acquire and renew: a LeaseView plus its lease_id. */
export interface HeldLease extends LeaseView {
  readonly lease_id: string;
}

export interface SessionView {
  readonly holder_incarnation: string;
  readonly owner_id: string;
  readonly ttl_ms: number;
  readonly created_at: string;
  readonly expires_at: string;
  readonly lease_count: number;
}
