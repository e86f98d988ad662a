/**
 * The canonical JSON under every idempotency digest (ids.ts): a request's
 * digest must not change with the server's version (a retry that spans an
 * upgrade would be refused `idempotency_conflict`), so the one-pass writer
 * is held to the plain definition, keys sorted as strings at every level
 * and each value as `JSON.stringify` writes it.
 */

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { canonicalJson, requestDigest } from './ids';

/** The definition, written plainly. */
function reference(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(reference).join(',')}]`;
  const obj = value as Record<string, unknown>;
  const parts: string[] = [];
  for (const k of Object.keys(obj).sort()) if (obj[k] !== undefined) parts.push(`${JSON.stringify(k)}:${reference(obj[k])}`);
  return `{${parts.join(',')}}`;
}

const samples: unknown[] = [
  null, true, 0, -0, 0.1, 1e21, -5e-7, 'plain', 'quote " backslash \\ newline \n tab \t nul \u0000 emoji 😀 lone \ud800',
  [], {}, [1, 'a', null, [2, [3]], { b: 1, a: 2 }],
  { z: 1, a: { y: [{ d: 4, c: 3 }], x: null }, m: 'x', skipped: undefined },
  // Integer-like keys sort as strings ("10" before "9"), whatever order the engine keeps them in.
  { 9: 'nine', 10: 'ten', b: 'b', 1: 'one', 'é': 'accent', 'A': 'upper', '': 'empty' },
  { session_id: 'ss_x', request_id: 'r_1', leases: Array.from({ length: 50 }, (_, i) => ({ route: `lease://a/b/r${i}`, lease_id: `ls_${i}`, fencing_token: i + 1, ...(i % 7 === 0 ? { ttl_ms: 30_000 } : {}) })) },
];

test('canonical JSON is the sorted-key JSON of every value', () => {
  for (const v of samples) assert.equal(canonicalJson(v), reference(v));
});

test('past the remembered keys (a body with thousands of distinct keys), the text is still the same', () => {
  const wide = Object.fromEntries(Array.from({ length: 2_000 }, (_, i) => [`k${(i * 7919) % 2_000}`, i % 3 === 0 ? { [`n${i}`]: i } : i]));
  assert.equal(canonicalJson(wide), reference(wide));
  assert.equal(canonicalJson(wide), reference(wide));
});

test('the digest is SHA-256 of the body without request_id, the same for any key order', () => {
  const body = { request_id: 'r_1', b: [2, { y: 1, x: 0 }], a: 'x' };
  const expected = createHash('sha256').update(reference({ a: 'x', b: [2, { x: 0, y: 1 }] })).digest('hex');
  assert.equal(requestDigest(body), expected);
  assert.equal(requestDigest({ a: 'x', b: [2, { x: 0, y: 1 }], request_id: 'r_2' }), expected);
  assert.notEqual(requestDigest({ ...body, a: 'y' }), expected);
});
