import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { AuditEvent } from '@/lib/client';
import { tenuresOf } from './lease-history-model';

let n = 0;
function ev(time: number, event_type: AuditEvent['event_type'], result: string, owner: string, token: number | null, reason: string | null = null): AuditEvent {
  return {
    id: `ae_${++n}`, time: new Date(time).toISOString(), event_type, family: 'default', route: 'lease://a/b/c', token_id: null,
    owner_id: owner, holder_incarnation: null, result, fencing_token: token, reason, correlation_id: 'c', latency_ms: 0,
  };
}

test('three tenures end as released, force-released and still held, with renewals and release requests on the right bar', () => {
  const events = [
    ev(100, 'lease_acquire', 'lease_acquired', 'w1', 1),
    ev(110, 'lease_renew', 'lease_renewed', 'w1', 1),
    ev(120, 'lease_release_request', 'release_requested', 'w1', 1, 'please let go now'),
    ev(130, 'lease_release', 'lease_released', 'w1', 1),
    ev(200, 'lease_acquire', 'lease_acquired', 'w2', 2),
    ev(210, 'lease_renew', 'lease_lost', 'w2', 2), // a refusal is not a renewal
    ev(250, 'lease_force_release', 'lease_force_released', 'w2', 2, 'stuck'),
    ev(300, 'lease_acquire', 'lease_acquired', 'w3', 3),
  ];
  const t = tenuresOf(events, 0, 1000, { fencing_token: 3 });
  assert.deepEqual(
    t.map((x) => [x.ownerId, x.fencingToken, x.start, x.end, x.endKind, x.renewals, x.requests.length]),
    [
      ['w1', 1, 100, 130, 'released', 1, 1],
      ['w2', 2, 200, 250, 'force_released', 0, 0],
      ['w3', 3, 300, 1000, 'held', 0, 0],
    ],
  );
  assert.equal(t[0]!.requests[0]!.reason, 'please let go now');
});

test('a tenure begun before the window starts at the window; one superseded without an end event ended with its session; expiry is an end', () => {
  const events = [
    ev(50, 'lease_renew', 'lease_renewed', 'old', 7),
    ev(60, 'lease_acquire', 'lease_acquired', 'next', 8),
    ev(90, 'lease_expire', 'lease_expired', 'next', 8),
    ev(95, 'lease_acquire', 'lease_acquired', 'last', 9),
  ];
  const t = tenuresOf(events, 10, 200, null);
  assert.deepEqual(
    t.map((x) => [x.ownerId, x.start, x.end, x.endKind, x.startedBefore]),
    [
      ['old', 10, 60, 'session_closed', true],
      ['next', 60, 90, 'expired', false],
      ['last', 95, 200, 'session_closed', false],
    ],
  );
});
