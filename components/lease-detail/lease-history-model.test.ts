import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { AuditEvent } from '@/lib/client';
import { fitView, panView, tenuresOf, zoomView } from './lease-history-model';

let n = 0;
function ev(
  time: number,
  event_type: AuditEvent['event_type'],
  result: string,
  owner: string,
  token: number | null,
  extra: { reason?: string; token_id?: string; details?: Record<string, unknown> } = {},
): AuditEvent {
  return {
    id: `ae_${++n}`, time: new Date(time).toISOString(), event_type, family: 'default', route: 'lease://a/b/c', token_id: extra.token_id ?? null,
    owner_id: owner, holder_incarnation: null, result, fencing_token: token, reason: extra.reason ?? null, correlation_id: 'c', latency_ms: 0,
    ...(extra.details ? { details: extra.details } : {}),
  };
}

test('three tenures end as released, force-released and still held, with renewals and release requests on the right bar', () => {
  const events = [
    ev(100, 'lease_acquire', 'lease_acquired', 'w1', 1),
    ev(110, 'lease_renew', 'lease_renewed', 'w1', 1),
    ev(120, 'lease_release_request', 'release_requested', 'w1', 1, { reason: 'please let go now' }),
    ev(130, 'lease_release', 'lease_released', 'w1', 1),
    ev(200, 'lease_acquire', 'lease_acquired', 'w2', 2),
    ev(210, 'lease_renew', 'lease_lost', 'w2', 2), // a refusal is not a renewal
    ev(250, 'lease_force_release', 'lease_force_released', 'w2', 2, { reason: 'stuck', token_id: 'tk_op' }),
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
  assert.deepEqual([t[1]!.reason, t[1]!.endedBy], ['stuck', 'tk_op'], "the operator's reason and token are the tenure's");
});

test('renewals the route does not show (batched) are read from the end event, and from the lease while it is held', () => {
  const events = [
    ev(100, 'lease_acquire', 'lease_acquired', 'w1', 1),
    ev(110, 'lease_renew', 'lease_renewed', 'w1', 1), // a single renew, on the route
    ev(150, 'lease_expire', 'lease_expired', 'w1', 1, { details: { renewal_count: 42 } }),
    ev(200, 'lease_acquire', 'lease_acquired', 'w2', 2),
    ev(230, 'lease_release', 'lease_released', 'w2', 2), // never renewed: no count
    ev(300, 'lease_acquire', 'lease_acquired', 'w3', 3),
    ev(310, 'lease_renew', 'lease_renewed', 'w3', 3),
  ];
  assert.deepEqual(tenuresOf(events, 0, 1000, { fencing_token: 3, renewal_count: 7 }).map((x) => [x.ownerId, x.endKind, x.renewals]), [
    ['w1', 'expired', 42],
    ['w2', 'released', 0],
    ['w3', 'held', 7],
  ]);
  // Counted on the route when the lease says less (or nothing).
  assert.deepEqual(tenuresOf(events, 0, 1000, { fencing_token: 3 }).map((x) => x.renewals), [42, 0, 1]);
});

test("a tenure ended by its session's close ends when the trail says, whenever the trail is read", () => {
  const events = [
    ev(100, 'lease_acquire', 'lease_acquired', 'w1', 1),
    ev(160, 'lease_release', 'session_closed', 'w1', 1),
    ev(200, 'lease_acquire', 'lease_acquired', 'w2', 2),
    ev(260, 'lease_expire', 'session_expired', 'w2', 2, { details: { lock_delay_until: new Date(300).toISOString() } }),
  ];
  for (const readAt of [1_000, 5_000, 60_000]) {
    const t = tenuresOf(events, 0, readAt, null);
    assert.deepEqual(
      t.map((x) => [x.ownerId, x.start, x.end, x.endKind, x.sessionEnd, x.lockDelayUntil]),
      [
        ['w1', 100, 160, 'session_closed', 'closed', null],
        ['w2', 200, 260, 'session_closed', 'expired', 300],
      ],
      `read at ${readAt}`,
    );
  }
});

test('expiry is an end with the lock-delay it started; a tenure begun before the window starts at the window', () => {
  const events = [
    ev(50, 'lease_renew', 'lease_renewed', 'old', 7),
    ev(55, 'lease_release', 'lease_released', 'old', 7),
    ev(60, 'lease_acquire', 'lease_acquired', 'next', 8),
    ev(90, 'lease_expire', 'lease_expired', 'next', 8, { details: { lock_delay_until: new Date(120).toISOString() } }),
  ];
  const t = tenuresOf(events, 10, 200, null);
  assert.deepEqual(
    t.map((x) => [x.ownerId, x.start, x.end, x.endKind, x.startedBefore, x.lockDelayUntil]),
    [
      ['old', 10, 55, 'released', true, null],
      ['next', 60, 90, 'expired', false, 120],
    ],
  );
});

test('a tenure whose end is not in the trail is "end not recorded" at the last moment seen, never "now"', () => {
  const events = [
    ev(100, 'lease_acquire', 'lease_acquired', 'lost-row', 1),
    ev(140, 'lease_checkpoint', 'checkpoint_written', 'lost-row', 1),
    ev(300, 'lease_acquire', 'lease_acquired', 'gone', 2),
    ev(320, 'lease_renew', 'lease_renewed', 'gone', 2),
  ];
  for (const readAt of [1_000, 9_000]) {
    const t = tenuresOf(events, 0, readAt, null);
    assert.deepEqual(
      t.map((x) => [x.ownerId, x.start, x.end, x.endKind]),
      [
        ['lost-row', 100, 140, 'unknown'],
        ['gone', 300, 320, 'unknown'],
      ],
    );
  }
  // While the lease is still being read, the open tenure is taken as held.
  assert.equal(tenuresOf(events, 0, 1_000, undefined).at(-1)!.endKind, 'held');
});

test('the view fits five tenures over 30 s, not the hour read, and reaches now while the route is held', () => {
  const hour = { from: 0, to: 3_600_000 };
  const events = [];
  let at = 3_560_000;
  for (let i = 1; i <= 5; i++) {
    events.push(ev(at, 'lease_acquire', 'lease_acquired', `w${i}`, i), ev(at + 5_000, 'lease_release', 'lease_released', `w${i}`, i));
    at += 6_000;
  }
  const t = tenuresOf(events, hour.from, hour.to, null);
  const view = fitView(t, hour, 3_600_000);
  assert.ok(view.from > 3_550_000 && view.from < 3_560_000, `starts just before the first tenure: ${view.from}`);
  assert.ok(view.to > 3_589_000 && view.to < 3_595_000, `ends just after the last: ${view.to}`);
  const held = tenuresOf([ev(3_590_000, 'lease_acquire', 'lease_acquired', 'w', 9)], hour.from, hour.to, { fencing_token: 9 });
  assert.ok(fitView(held, hour, 3_600_000).to >= 3_600_000, 'a held route shows now');
});

test('zooming keeps the point under the pointer and stays inside the window read; panning stops at its edges', () => {
  const limit = { from: 0, to: 100_000 };
  const view = { from: 40_000, to: 60_000 };
  assert.deepEqual(zoomView(view, 0.5, limit), { from: 45_000, to: 55_000 });
  assert.deepEqual(zoomView(view, 0.5, limit, 40_000), { from: 40_000, to: 50_000 });
  assert.deepEqual(zoomView(view, 100, limit), limit);
  assert.equal(zoomView({ from: 0, to: 1_200 }, 0.1, limit).to - zoomView({ from: 0, to: 1_200 }, 0.1, limit).from, 1_000, 'never narrower than a second');
  assert.deepEqual(panView(view, -50_000, limit), { from: 0, to: 20_000 });
  assert.deepEqual(panView(view, 50_000, limit), { from: 80_000, to: 100_000 });
});
