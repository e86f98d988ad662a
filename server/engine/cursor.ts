/**
 * Opaque, tamper-evident cursors: base64url(JSON) + "." + HMAC-SHA256. The
 * payload binds the family, the query (selector and filters), the epoch and
 * the ordering; a cursor used with anything else, or altered, is
 * `cursor_invalid`, never a silent restart.
 */

import { createHmac, timingSafeEqual } from 'node:crypto';
import { fail } from './errors';

export interface CursorBinding {
  /** What the cursor pages over: `leases` or `sessions`. */
  kind: string;
  family: string;
  /** Canonical text of the query it belongs to (selector and filters). */
  query: string;
  epoch: string;
}

export class CursorCodec {
  constructor(private readonly secret: Buffer) {}

  private mac(payload: string): string {
    return createHmac('sha256', this.secret).update(payload).digest('base64url');
  }

  /** Encode a keyset position bound to `binding`. */
  encode(binding: CursorBinding, position: unknown): string {
    const payload = Buffer.from(JSON.stringify({ b: binding, p: position })).toString('base64url');
    return `${payload}.${this.mac(payload)}`;
  }

  /** Decode a cursor, checking its MAC and that it belongs to `binding`. */
  decode(cursor: string, binding: CursorBinding): unknown {
    const dot = cursor.indexOf('.');
    if (dot <= 0 || cursor.length > 4096) fail('cursor_invalid', 'cursor is malformed');
    const payload = cursor.slice(0, dot);
    const given = Buffer.from(cursor.slice(dot + 1), 'base64url');
    const expected = Buffer.from(this.mac(payload), 'base64url');
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) fail('cursor_invalid', 'cursor was altered');
    let parsed: { b?: CursorBinding; p?: unknown };
    try {
      parsed = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as typeof parsed;
    } catch {
      fail('cursor_invalid', 'cursor is malformed');
    }
    const b = parsed.b;
    if (!b || b.kind !== binding.kind || b.family !== binding.family || b.query !== binding.query || b.epoch !== binding.epoch) {
      fail('cursor_invalid', 'cursor belongs to another query, family or store epoch');
    }
    return parsed.p;
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
