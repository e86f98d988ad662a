/** Random identifiers, secret hashing and canonical digests. */

import { hash, randomBytes } from 'node:crypto';

const POOL_SIZE = 8192;
let pool = Buffer.alloc(0);
let offset = POOL_SIZE;

/**
 * Cryptographically random bytes from a pooled buffer: one getrandom call per
 * 8 KiB instead of one per id (ids are minted on every acquisition). Each
 * byte is handed out once.
 */
export function pooledRandom(n: number): Buffer {
  if (n > POOL_SIZE) return randomBytes(n);
  if (offset + n > POOL_SIZE) {
    pool = randomBytes(POOL_SIZE);
    offset = 0;
  }
  const out = Buffer.from(pool.subarray(offset, offset + n));
  offset += n;
  return out;
}

/** A random id with a type prefix: `ls_…`, `hi_…`, `tk_…`. `bytes` of entropy. */
export function randomId(prefix: string, bytes = 16): string {
  return `${prefix}${pooledRandom(bytes).toString('base64url')}`;
}

/**
 * SHA-256 (hex) of a secret: secrets are stored only as this. The one-shot
 * `crypto.hash` costs half of a `createHash` object (three per request).
 */
export function hashSecret(secret: string): string {
  return hash('sha256', secret, 'hex');
}

/** JSON with object keys sorted at every level: one text per value. */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  if (Array.isArray(value)) {
    let out = '[';
    for (let i = 0; i < value.length; i++) {
      if (i > 0) out += ',';
      // As `join` writes an undefined element: nothing.
      out += canonicalJson(value[i]) ?? '';
    }
    return `${out}]`;
  }
  return canonicalObject(value as Record<string, unknown>, undefined);
}

/** Object keys as JSON strings, remembered: a body's keys are mostly the same few (bounded, since metadata keys are anyone's). */
const quotedKeys = new Map<string, string>();

function quotedKey(k: string): string {
  let q = quotedKeys.get(k);
  if (q === undefined) {
    q = JSON.stringify(k);
    if (quotedKeys.size < 512) quotedKeys.set(k, q);
  }
  return q;
}

/**
 * An object's canonical JSON, leaving out `skip` (the string is built in one
 * pass: digests run on every request, a batched renew's over each of its
 * items; ids.test.ts holds it to sorted `JSON.stringify`).
 */
function canonicalObject(obj: Record<string, unknown>, skip: string | undefined): string {
  const keys = Object.keys(obj);
  if (keys.length > 1) keys.sort();
  let out = '{';
  let first = true;
  for (const k of keys) {
    const v = obj[k];
    if (v === undefined || k === skip) continue;
    if (!first) out += ',';
    first = false;
    out += `${quotedKey(k)}:${typeof v === 'object' ? canonicalJson(v) : JSON.stringify(v)}`;
  }
  return `${out}}`;
}

/**
 * The idempotency digest (docs/semantics.md §6): SHA-256 of the request body as
 * canonical JSON without `request_id`. An omitted field and a field sent with
 * its default value give different digests, by design.
 */
export function requestDigest(body: Record<string, unknown>): string {
  return hash('sha256', canonicalObject(body, 'request_id'), 'hex');
}

const correlationPrefix = `c_${randomBytes(6).toString('base64url')}`;
let correlationCounter = 0;

/** A correlation id unique to this process's lifetime (random prefix + counter). */
export function correlationId(): string {
  correlationCounter = (correlationCounter + 1) % Number.MAX_SAFE_INTEGER;
  return `${correlationPrefix}${correlationCounter.toString(36)}`;
}
