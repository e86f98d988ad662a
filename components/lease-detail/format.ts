import { ERROR_CODES } from '@/lib/error-codes';
import type { AuditEventType } from '@/lib/client';

/** 30000 → "30s", 90000 → "1m 30s", 7200000 → "2h"; whole milliseconds below a second. */
export function formatDuration(ms: number): string {
  if (ms < 1000) return `${ms} ms`;
  const s = Math.round(ms / 1000);
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const sec = s % 60;
  return [h && `${h}h`, m && `${m}m`, sec && `${sec}s`].filter(Boolean).join(' ') || '0s';
}

const EVENT_LABELS: Record<AuditEventType, string> = {
  session_open: 'Session opened',
  session_close: 'Session closed',
  session_expire: 'Session expired',
  lease_acquire: 'Acquire',
  lease_renew: 'Renew',
  lease_release: 'Release',
  lease_expire: 'Expired',
  lease_checkpoint: 'Checkpoint',
  lease_force_release: 'Force release',
  lease_revoke: 'Revoke',
  lease_release_request: 'Release requested',
  token_create: 'Token created',
  token_revoke: 'Token revoked',
  embed_token_create: 'Embed token created',
  access_denied: 'Access denied',
  policy_set: 'Policy set',
  policy_delete: 'Policy deleted',
};

export function eventLabel(type: string): string {
  return EVENT_LABELS[type as AuditEventType] ?? type;
}

export function isOperatorEvent(type: string): boolean {
  return type === 'lease_force_release' || type === 'lease_revoke';
}

const ERRORS: ReadonlySet<string> = new Set(ERROR_CODES);
/** Refusals that are part of normal coordination, not faults. */
const EXPECTED_REFUSALS: ReadonlySet<string> = new Set(['lease_conflict', 'lease_lost', 'lease_mismatch', 'lease_not_found', 'checkpoint_not_found', 'session_not_found']);

/** How an audit result reads: a success code, an expected refusal, or a fault. */
export function resultTone(result: string): 'good' | 'warn' | 'bad' {
  if (!ERRORS.has(result)) return 'good';
  return EXPECTED_REFUSALS.has(result) ? 'warn' : 'bad';
}
