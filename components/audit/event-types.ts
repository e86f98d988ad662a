import type { AuditEventType } from '@/lib/client';
import type { BadgeProps } from '@/components/ui/badge';

type Tone = NonNullable<BadgeProps['tone']>;

type Group = 'Operator actions' | 'Security' | 'Tokens' | 'Sessions' | 'Leases';

/**
 * Every audit event type with how the console names and colors it. A Record,
 * so a type added to the SDK without an entry here fails to compile.
 * Operator actions and refusals stand out; routine lease traffic does not.
 */
const EVENT_TYPES: Record<AuditEventType, { label: string; tone: Tone; group: Group; notable?: true }> = {
  lease_force_release: { label: 'Force release', tone: 'warn', group: 'Operator actions', notable: true },
  lease_revoke: { label: 'Revoke', tone: 'warn', group: 'Operator actions', notable: true },
  policy_set: { label: 'Policy set', tone: 'warn', group: 'Operator actions', notable: true },
  policy_delete: { label: 'Policy deleted', tone: 'warn', group: 'Operator actions', notable: true },
  lease_release_request: { label: 'Release requested', tone: 'info', group: 'Operator actions', notable: true },
  access_denied: { label: 'Access denied', tone: 'bad', group: 'Security', notable: true },
  token_create: { label: 'Token created', tone: 'info', group: 'Tokens' },
  token_revoke: { label: 'Token revoked', tone: 'info', group: 'Tokens' },
  embed_token_create: { label: 'Embed token created', tone: 'info', group: 'Tokens' },
  session_open: { label: 'Session opened', tone: 'neutral', group: 'Sessions' },
  session_close: { label: 'Session closed', tone: 'neutral', group: 'Sessions' },
  session_expire: { label: 'Session expired', tone: 'neutral', group: 'Sessions' },
  lease_acquire: { label: 'Acquire', tone: 'neutral', group: 'Leases' },
  lease_renew: { label: 'Renew', tone: 'neutral', group: 'Leases' },
  lease_release: { label: 'Release', tone: 'neutral', group: 'Leases' },
  lease_expire: { label: 'Lease expired', tone: 'neutral', group: 'Leases' },
  lease_checkpoint: { label: 'Checkpoint', tone: 'neutral', group: 'Leases' },
};

export const AUDIT_EVENT_TYPES = Object.keys(EVENT_TYPES) as AuditEventType[];

/** The types in the select's groups, in this file's order. */
export function auditEventGroups(): Array<{ group: Group; types: AuditEventType[] }> {
  const groups: Array<{ group: Group; types: AuditEventType[] }> = [];
  for (const t of AUDIT_EVENT_TYPES) {
    const g = EVENT_TYPES[t].group;
    const at = groups.find((x) => x.group === g);
    if (at) at.types.push(t);
    else groups.push({ group: g, types: [t] });
  }
  return groups;
}

export function isAuditEventType(s: string | null): s is AuditEventType {
  return s !== null && Object.hasOwn(EVENT_TYPES, s);
}

export function eventTypeLook(type: AuditEventType): { label: string; tone: Tone; notable: boolean } {
  const look = EVENT_TYPES[type] ?? { label: type, tone: 'neutral' as const };
  return { label: look.label, tone: look.tone, notable: look.notable === true };
}
