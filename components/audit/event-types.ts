import type { AuditEventType } from '@/lib/client';
import type { BadgeProps } from '@/components/ui/badge';

type Tone = NonNullable<BadgeProps['tone']>;

/**
 * Every audit event type with how the console names and colors it. A Record,
 * so a type added to the SDK without an entry here fails to compile.
 * Operator actions and refusals stand out; routine lease traffic does not.
 */
const EVENT_TYPES: Record<AuditEventType, { label: string; tone: Tone; notable?: true }> = {
  lease_force_release: { label: 'Force release', tone: 'warn', notable: true },
  lease_revoke: { label: 'Revoke', tone: 'warn', notable: true },
  access_denied: { label: 'Access denied', tone: 'bad', notable: true },
  token_create: { label: 'Token created', tone: 'info' },
  token_revoke: { label: 'Token revoked', tone: 'info' },
  embed_token_create: { label: 'Embed token created', tone: 'info' },
  session_open: { label: 'Session opened', tone: 'neutral' },
  session_close: { label: 'Session closed', tone: 'neutral' },
  session_expire: { label: 'Session expired', tone: 'neutral' },
  lease_acquire: { label: 'Acquire', tone: 'neutral' },
  lease_renew: { label: 'Renew', tone: 'neutral' },
  lease_release: { label: 'Release', tone: 'neutral' },
  lease_expire: { label: 'Lease expired', tone: 'neutral' },
  lease_checkpoint: { label: 'Checkpoint', tone: 'neutral' },
};

export const AUDIT_EVENT_TYPES = Object.keys(EVENT_TYPES) as AuditEventType[];

export function isAuditEventType(s: string | null): s is AuditEventType {
  return s !== null && Object.hasOwn(EVENT_TYPES, s);
}

export function eventTypeLook(type: AuditEventType): { label: string; tone: Tone; notable: boolean } {
  const look = EVENT_TYPES[type] ?? { label: type, tone: 'neutral' as const };
  return { label: look.label, tone: look.tone, notable: look.notable === true };
}
