/**
 * The resume policy (resume.ts): when a live view may trust a replay, and
 * where it resumes from.
 */

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { judgeResume, ResumePoint } from './resume';
import type { HelloEvent } from './subscription';

const hello = (over: Partial<HelloEvent> = {}): HelloEvent => ({ type: 'hello', epoch: 'ep_1', revision: 50, heartbeat_ms: 15_000, resumed: true, ...over });

test('a resumed hello of the same epoch is trusted', () => {
  assert.deepEqual(judgeResume(40, 'ep_1', hello(), undefined), { kind: 'resumed', since: 40 });
});

test("the server's resync wins over everything, with its reason", () => {
  assert.deepEqual(judgeResume(40, 'ep_1', hello({ resumed: false }), { type: 'resync', reason: 'horizon', revision: 50 }), {
    kind: 'relisted',
    reason: 'resync',
    detail: 'horizon',
    since: 40,
  });
});

test('another epoch relists even when the server replays, and a server that did not resume relists', () => {
  assert.equal(judgeResume(40, 'ep_1', hello({ epoch: 'ep_2' }), undefined).reason, 'epoch');
  assert.equal(judgeResume(40, 'ep_1', hello({ resumed: false }), undefined).reason, 'not_resumed');
});

test('the resume point: nothing to resume before a listing; then the newest change applied; an overflow forces a listing once', () => {
  const p = new ResumePoint();
  assert.deepEqual(p.next(true), { since: undefined, reason: undefined });
  p.listed(10, 'ep_1');
  assert.deepEqual(p.next(true), { since: 10 });
  p.applied(12);
  p.applied(11);
  assert.deepEqual(p.next(true), { since: 12 });
  p.mustRelist = 'overflow';
  assert.deepEqual(p.next(true), { since: undefined, reason: 'overflow' });
  p.listed(20, 'ep_1');
  assert.deepEqual(p.next(true), { since: 20 });
  assert.deepEqual(p.next(false), { since: undefined, reason: 'disabled' });
});
