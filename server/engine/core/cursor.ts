/**
 * Opaque, tamper-evident cursors, sealed with AES-256-GCM under a key
 * derived from the server secret (HKDF-SHA256). The plaintext is only the
 * keyset position; the binding (what the cursor pages over, the family, the
 * query's canonical text and the store epoch) is the authenticated
 * associated data, so a cursor used with anything else, or altered in any
 * bit, fails authentication and is `cursor_invalid`, never a silent restart.
 *
 * Encrypted rather than only signed: a position can be a route the scan
 * examined but did not return (a page that ran out of its examine budget
 * resumes after it), and that route may lie outside the caller's selector
 * and grant. Sealed, the caller learns nothing from it.
 *
 * Wire form: base64url(iv[12] ‖ ciphertext ‖ tag[16]).
 */

import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';
import { fail } from './errors';

export interface CursorBinding {
  /** What the cursor pages over: `leases`, `sessions` or `audit`. */
  kind: string;
  family: string;
  /** Canonical text of the query it belongs to (selector and filters). */
  query: string;
  epoch: string;
}

const IV_BYTES = 12;
const TAG_BYTES = 16;
const MAX_CURSOR_CHARS = 4096;

function aad(b: CursorBinding): Buffer {
  return Buffer.from(JSON.stringify([b.kind, b.family, b.query, b.epoch]));
}

export class CursorCodec {
  private readonly key: Buffer;

  constructor(secret: Buffer) {
    this.key = Buffer.from(hkdfSync('sha256', secret, Buffer.from('leasehold'), Buffer.from('leasehold cursor v1 aes-256-gcm'), 32));
  }

  /** Encode a keyset position bound to `binding`. */
  encode(binding: CursorBinding, position: unknown): string {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv, { authTagLength: TAG_BYTES });
    cipher.setAAD(aad(binding));
    const sealed = Buffer.concat([cipher.update(JSON.stringify(position), 'utf8'), cipher.final()]);
    return Buffer.concat([iv, sealed, cipher.getAuthTag()]).toString('base64url');
  }

  /** Decode a cursor, authenticating it against `binding` (`cursor_invalid` when it is not one of ours for this query). */
  decode(cursor: string, binding: CursorBinding): unknown {
    if (cursor.length > MAX_CURSOR_CHARS || !/^[A-Za-z0-9_-]+$/.test(cursor)) fail('cursor_invalid', 'cursor is malformed');
    const bytes = Buffer.from(cursor, 'base64url');
    // One spelling per cursor: base64's unused low bits of the last character (or a character too many) would pass the tag unseen.
    if (bytes.length <= IV_BYTES + TAG_BYTES || bytes.toString('base64url') !== cursor) fail('cursor_invalid', 'cursor is malformed');
    let text: string;
    try {
      const decipher = createDecipheriv('aes-256-gcm', this.key, bytes.subarray(0, IV_BYTES), { authTagLength: TAG_BYTES });
      decipher.setAAD(aad(binding));
      decipher.setAuthTag(bytes.subarray(bytes.length - TAG_BYTES));
      text = Buffer.concat([decipher.update(bytes.subarray(IV_BYTES, bytes.length - TAG_BYTES)), decipher.final()]).toString('utf8');
    } catch {
      fail('cursor_invalid', 'cursor was altered, or belongs to another query, family or store epoch');
    }
    try {
      return JSON.parse(text) as unknown;
    } catch {
      fail('cursor_invalid', 'cursor is malformed');
    }
  }
}

/** A paged query's cursor, bound once: the position to resume from (null on the first page) and the encoder of the next. */
export interface BoundCursor<P> {
  after: P | null;
  encode(position: P): string;
}

/**
 * Bind a paged query (LIST, sessions, audit) to its cursor: decode and check
 * the given cursor (`cursor_invalid` if altered, of another query, family or
 * epoch, or if its position is not of the query's shape) and encode the next.
 */
export function bindCursor<P>(codec: CursorCodec, binding: CursorBinding, cursor: string | undefined, isPosition: (p: unknown) => p is P): BoundCursor<P> {
  const after = cursor ? codec.decode(cursor, binding) : null;
  if (after !== null && !isPosition(after)) fail('cursor_invalid', 'cursor is malformed');
  return { after: after as P | null, encode: (position) => codec.encode(binding, position) };
}
