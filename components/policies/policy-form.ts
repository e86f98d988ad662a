/** The policy form's fields and their checks, run before anything is sent (the server checks again). */

import { parseSelector } from '@/lib/selector';

export const NUMBER_FIELDS = [
  { key: 'ttlMinMs', wire: 'ttl_min_ms', label: 'Minimum TTL (ms)', min: 1_000, max: 600_000 },
  { key: 'ttlMaxMs', wire: 'ttl_max_ms', label: 'Maximum TTL (ms)', min: 1_000, max: 600_000 },
  { key: 'ttlDefaultMs', wire: 'ttl_default_ms', label: 'Default TTL (ms)', min: 1_000, max: 600_000 },
  { key: 'maxLifetimeMs', wire: 'max_lifetime_ms', label: 'Maximum lifetime (ms)', min: 1_000, max: 86_400_000 },
  { key: 'lockDelayMs', wire: 'lock_delay_ms', label: 'Lock-delay (ms)', min: 0, max: 60_000 },
  { key: 'maxWaiters', wire: 'max_waiters', label: 'Maximum waiters', min: 0, max: 1_024 },
] as const;

type NumberKey = (typeof NUMBER_FIELDS)[number]['key'];
export type PolicyDraft = { selector: string; reason: string } & Record<NumberKey, string>;

export const EMPTY_DRAFT: PolicyDraft = { selector: '', reason: '', ttlMinMs: '', ttlMaxMs: '', ttlDefaultMs: '', maxLifetimeMs: '', lockDelayMs: '', maxWaiters: '' };

/** Field errors of a draft (empty when it may be sent); blank numbers mean "the global limit". */
export function draftErrors(d: PolicyDraft): Partial<Record<keyof PolicyDraft, string>> {
  const out: Partial<Record<keyof PolicyDraft, string>> = {};
  const sel = parseSelector(d.selector.trim());
  if (!d.selector.trim()) out.selector = 'Enter the selector the policy applies to.';
  else if (!sel.ok) out.selector = `Not a selector: it ${sel.reason}.`;
  const reasonLength = [...d.reason.trim()].length;
  if (reasonLength < 10 || reasonLength > 500) out.reason = 'Say why, in 10 to 500 characters (it goes to the audit log).';
  const n: Partial<Record<NumberKey, number>> = {};
  for (const f of NUMBER_FIELDS) {
    const text = d[f.key].trim();
    if (text === '') continue;
    if (!/^\d+$/.test(text)) out[f.key] = 'Enter a whole number, or leave it blank for the global limit.';
    else if (Number(text) < f.min || Number(text) > f.max) out[f.key] = `From ${f.min} to ${f.max}.`;
    else n[f.key] = Number(text);
  }
  const min = n.ttlMinMs ?? 1_000;
  const max = n.ttlMaxMs ?? 600_000;
  if (!out.ttlMaxMs && min > max) out.ttlMaxMs = 'Must not be below the minimum TTL.';
  if (!out.ttlDefaultMs && n.ttlDefaultMs !== undefined && (n.ttlDefaultMs < min || n.ttlDefaultMs > max)) out.ttlDefaultMs = 'Must lie between the minimum and maximum TTL.';
  return out;
}

/** The draft's numbers (null where blank). */
export function draftNumbers(d: PolicyDraft): Record<NumberKey, number | null> {
  const out = {} as Record<NumberKey, number | null>;
  for (const f of NUMBER_FIELDS) out[f.key] = d[f.key].trim() === '' ? null : Number(d[f.key]);
  return out;
}
