/**
 * The success envelope written without its merged object (envelope.ts,
 * successJson) is byte for byte the merged object's JSON, for recorded
 * idempotent answers (whose text is reused) and any other payload.
 */

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { successBody, successJson } from './envelope';
import { recordAnswer, recordedText } from '../engine/core/idempotency';
import type { Step } from '../engine/core/step';
import { millis } from '../store/millis';

const PAYLOADS: object[] = [
  {},
  { a: undefined },
  { released: 3 },
  { route: 'lease://a/b/c', fencing_token: 9_007_199_254_740_991 },
  { lease: { route: 'lease://a/b/c', owner_id: 'w "1" \u00e9 \u2028 \ud800', metadata: { k: 1, j: 'x' }, release_request: null, lease_id: 'ls_1' }, queued: false },
  { items: [], next_cursor: null, revision: 0, epoch: 'e' },
  { window_s: 60, step_s: 1, series: { '1': [[1, 2]], b: [] } },
  // Shapes no answer has, which take the merged object: a key of the envelope, an integer-like key, toJSON.
  { status: 'mine', x: 1 },
  { code: 'mine' },
  { correlation_id: 'mine' },
  { '7': 'first', b: 2 },
  { '01': 'not an index', b: 2 },
  { toJSON: () => ({ replaced: true }) },
];

test('successJson is JSON.stringify(successBody(...)), byte for byte', () => {
  for (const payload of PAYLOADS) {
    for (const cid of ['c_AbC-_9z', 'c_"odd\\']) {
      assert.equal(successJson('lease_acquired', cid, payload), JSON.stringify(successBody('lease_acquired', cid, payload)), JSON.stringify(payload));
    }
  }
});

test('a recorded answer is sent as the text it was recorded as', async () => {
  let stored = '';
  const step = { tx: { putIdempotency: async (r: { answer: string }) => void (stored = r.answer) } } as unknown as Step;
  const answer = { lease: { route: 'lease://a/b/c', fencing_token: 4, lease_id: 'ls_9' }, queued: true };
  await recordAnswer(step, { family: 'f', op: 'acquire', route: 'lease://a/b/c', requestId: 'r' }, 'd', answer, millis(1));
  assert.equal(recordedText(answer), stored);
  assert.equal(stored, JSON.stringify(answer));
  assert.equal(successJson('lease_acquired', 'c_1', answer), JSON.stringify(successBody('lease_acquired', 'c_1', answer)));
  // A copy is not the recorded object: serialized afresh.
  const copy = { ...answer, release_requests: [] };
  assert.equal(recordedText(copy), undefined);
  assert.equal(successJson('lease_renewed', 'c_2', copy), JSON.stringify(successBody('lease_renewed', 'c_2', copy)));
});
