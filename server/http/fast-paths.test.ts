/**
 * The router's hand-written checks for hot bodies (schemas.ts, FAST_PATHS)
 * accept only what their schema accepts and returns unchanged: checked over
 * every combination of edge values for each field.
 */

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SESSION_BATCH } from '@/lib/limits';
import { AcquireBody, EmptyBody, FAST_PATHS, NoQuery, ReleaseBody, RenewBody, SessionRenewBody } from './schemas';

const EDGES: Record<string, unknown[]> = {
  session_id: [undefined, '', 's', 'x'.repeat(256), 'x'.repeat(257), 7, null, 'é'],
  request_id: [undefined, '', 'r-1', '!~', 'x'.repeat(128), 'x'.repeat(129), 'a b', 'é', 3],
  lease_id: [undefined, '', 'ls_1', 'x'.repeat(128), 'x'.repeat(129), 1],
  fencing_token: [undefined, 0, 1, 2.5, Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER + 2, -1, '1'],
  ttl_ms: [undefined, 999, 1_000, 600_000, 600_001, 1_500.5, '2000'],
  max_lifetime_ms: [undefined, 999, 1_000, 86_400_000, 86_400_001],
  wait_ms: [undefined, -1, 0, 30_000, 30_001, 0.5],
  metadata: [undefined, { a: 1 }],
  extra: [undefined, 1],
};

/** Every object made of one value per field (undefined: the field is absent), from a base of valid values. */
function* samples(fields: string[]): Generator<Record<string, unknown>> {
  const base: Record<string, unknown> = { session_id: 's', request_id: 'r-1', lease_id: 'ls_1', fencing_token: 1 };
  // One field varied at a time over its edges, then two at a time over a few.
  for (const f of fields) {
    for (const v of EDGES[f]!) {
      const o: Record<string, unknown> = {};
      for (const g of fields) if (g !== f && base[g] !== undefined) o[g] = base[g];
      if (v !== undefined) o[f] = v;
      yield o;
    }
  }
  for (const f of fields) {
    for (const g of fields) {
      if (f >= g) continue;
      for (const a of EDGES[f]!.slice(0, 4)) {
        for (const b of EDGES[g]!.slice(0, 4)) {
          const o: Record<string, unknown> = {};
          for (const h of fields) if (base[h] !== undefined) o[h] = base[h];
          if (a === undefined) delete o[f];
          else o[f] = a;
          if (b === undefined) delete o[g];
          else o[g] = b;
          yield o;
        }
      }
    }
  }
}

const CASES = [
  { name: 'acquire', schema: AcquireBody, fields: ['session_id', 'request_id', 'ttl_ms', 'max_lifetime_ms', 'wait_ms', 'metadata', 'extra'] },
  { name: 'release', schema: ReleaseBody, fields: ['session_id', 'request_id', 'lease_id', 'fencing_token', 'extra'] },
  { name: 'renew', schema: RenewBody, fields: ['session_id', 'request_id', 'lease_id', 'fencing_token', 'ttl_ms', 'extra'] },
  { name: 'empty body', schema: EmptyBody, fields: ['extra'] },
  { name: 'no query', schema: NoQuery, fields: ['extra'] },
];

for (const c of CASES) {
  test(`fast path for ${c.name}: accepts only what the schema accepts, unchanged`, () => {
    const fast = FAST_PATHS.get(c.schema)!;
    assert.ok(fast, 'a fast path exists');
    let accepted = 0;
    let refused = 0;
    for (const v of samples(c.fields)) {
      const r = c.schema.safeParse(v);
      if (fast(v)) {
        accepted++;
        assert.ok(r.success, `fast path accepted what the schema refuses: ${JSON.stringify(v)}`);
        assert.deepEqual(r.data, v);
      } else {
        refused++;
      }
    }
    // Both sides were exercised: valid bodies take the fast path, faulty ones the schema.
    assert.ok(accepted > 0 && refused > 0, `accepted ${accepted}, refused ${refused}`);
  });
}

test('fast paths refuse non-objects and inherited keys', () => {
  for (const fast of FAST_PATHS.values()) {
    for (const v of [null, [], 'x', 1, undefined]) assert.equal(fast(v), false);
  }
  const inherited = Object.create({ extra: 1 }) as Record<string, unknown>;
  assert.equal(FAST_PATHS.get(EmptyBody)!(inherited), false);
  assert.equal(FAST_PATHS.get(EmptyBody)!({}), true);
});

/** Batched renew bodies (the fleet's hot call): valid ones, then each field of the body and of one item varied over its edges, and the list itself. */
function* batchSamples(): Generator<unknown> {
  const item = (i: number) => ({ route: `lease://acme/renderers/r${i}`, lease_id: `ls_${i}`, fencing_token: i + 1 });
  const body = (leases: unknown, top: Record<string, unknown> = {}) => ({ session_id: 's', request_id: 'r-1', leases, ...top });
  yield body([item(0)]);
  yield body([item(0), { ...item(1), ttl_ms: 5_000 }]);
  for (const f of ['session_id', 'request_id', 'extra']) {
    for (const v of EDGES[f]!) {
      const b: Record<string, unknown> = body([item(0)]);
      if (v === undefined) delete b[f];
      else b[f] = v;
      yield b;
    }
  }
  const ROUTES = ['lease://acme/renderers/r9', 'lease://acme/renderers/*', 'lease://acme/**', 'lease://acme/renderers', 'acme/renderers/r9', '', `lease://acme/renderers/${'x'.repeat(377)}`, `lease://acme/renderers/${'x'.repeat(378)}`, 'lease://Acme/r/x', 'lease://acme/renderers/r 9', 7, null, undefined];
  const itemEdges: Record<string, unknown[]> = { route: ROUTES, lease_id: EDGES.lease_id!, fencing_token: EDGES.fencing_token!, ttl_ms: EDGES.ttl_ms!, extra: EDGES.extra! };
  for (const [f, edges] of Object.entries(itemEdges)) {
    for (const v of edges) {
      const changed: Record<string, unknown> = { ...item(9) };
      if (v === undefined) delete changed[f];
      else changed[f] = v;
      yield body([item(0), changed]);
    }
  }
  // The list: absent, not a list, empty, at and past the limit, a route twice, items that are not objects.
  yield { session_id: 's', request_id: 'r-1' };
  for (const leases of [null, {}, 'x', [], [null], [[]], ['x'], [item(0), item(0)], [item(0), { ...item(1), route: item(0).route }]]) yield body(leases);
  yield body(Array.from({ length: SESSION_BATCH.renewItems }, (_, i) => item(i)));
  yield body(Array.from({ length: SESSION_BATCH.renewItems + 1 }, (_, i) => item(i)));
}

test('fast path for the batched renew: accepts only what the schema accepts, unchanged', () => {
  const fast = FAST_PATHS.get(SessionRenewBody)!;
  assert.ok(fast, 'a fast path exists');
  let accepted = 0;
  let refused = 0;
  for (const v of batchSamples()) {
    const r = SessionRenewBody.safeParse(v);
    if (fast(v)) {
      accepted++;
      assert.ok(r.success, `fast path accepted what the schema refuses: ${JSON.stringify(v).slice(0, 300)}`);
      assert.deepEqual(r.data, v);
    } else {
      refused++;
      // A batched renew has nothing the check leaves to the schema (no metadata): every valid body takes the fast path.
      assert.ok(!r.success, `fast path refused what the schema accepts: ${JSON.stringify(v).slice(0, 300)}`);
    }
  }
  assert.ok(accepted >= 10 && refused >= 30, `accepted ${accepted}, refused ${refused}`);
  // An item whose fields are inherited (never from JSON.parse) is left to the schema.
  assert.equal(fast({ session_id: 's', request_id: 'r-1', leases: [Object.create({ route: 'lease://a/b/c', lease_id: 'ls_1', fencing_token: 1 })] }), false);
});
