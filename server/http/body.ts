/**
 * Request bodies: bounded reading, media type, strict UTF-8, JSON nesting
 * depth. Every fault is a typed LeaseholdError, never a 500.
 */

import { isAscii } from 'node:buffer';
import type { IncomingMessage } from 'node:http';
import { LeaseholdError, fail } from '../engine/core/errors';

export const MAX_BODY_BYTES = 128 * 1024;
const MAX_JSON_DEPTH = 32;
/** Past this the connection is cut rather than drained. */
const DRAIN_LIMIT = 1024 * 1024;

interface RawBody {
  bytes: Buffer;
  tooLarge: boolean;
}

const EMPTY = Buffer.alloc(0);

/**
 * The whole body when it has already arrived and nothing has read it yet
 * (nearly every small request: the parser pushes the body in the same pass
 * as the head), taken at once without listeners or a promise; else
 * undefined, and `readBody` reads it.
 */
export function bufferedBody(req: IncomingMessage): RawBody | undefined {
  if (!req.complete || req.destroyed || req.readableFlowing !== null || req.readableLength > MAX_BODY_BYTES) return undefined;
  if (req.readableLength === 0) return { bytes: EMPTY, tooLarge: false };
  // `read()` is typed `any`; a stream without an encoding gives a Buffer (or null).
  const bytes: Buffer | null = req.read();
  return bytes === null ? undefined : { bytes, tooLarge: false };
}

/** Read the body, keeping at most MAX_BODY_BYTES (the rest is drained, then the socket cut). */
export function readBody(req: IncomingMessage): Promise<RawBody> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let tooLarge = false;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > MAX_BODY_BYTES) {
        tooLarge = true;
        chunks.length = 0;
        if (size > DRAIN_LIMIT) {
          resolve({ bytes: Buffer.alloc(0), tooLarge: true });
          req.socket.destroy();
        }
        return;
      }
      chunks.push(c);
    });
    // One chunk (nearly every body) is the body itself, not a copy of it.
    req.on('end', () => resolve({ bytes: tooLarge ? EMPTY : chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size), tooLarge }));
    // A client that goes away mid-body: nobody is left to answer, but the
    // request must not hang or be logged as a server fault.
    const gone = () => reject(new LeaseholdError('invalid_request', 'the client closed the request before its body ended'));
    req.on('error', gone);
    req.on('close', () => {
      if (!req.complete) gone();
    });
    if (req.destroyed && !req.complete) gone();
  });
}

/** Is the Content-Type JSON (optionally `charset=utf-8`)? */
function isJsonMediaType(contentType: string | undefined): boolean {
  if (!contentType) return false;
  if (contentType === 'application/json') return true;
  const [type, ...params] = contentType.split(';').map((s) => s.trim().toLowerCase());
  if (type !== 'application/json') return false;
  return params.every((p) => p === '' || p === 'charset=utf-8' || p === 'charset="utf-8"');
}

const decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false });

/** Bracket depth outside strings; cheap guard before JSON.parse. */
function depthExceeds(text: string, max: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++;
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x7b || c === 0x5b) {
      if (++depth > max) return true;
    } else if (c === 0x7d || c === 0x5d) depth--;
  }
  return false;
}

/**
 * Parse a JSON object body. An empty body is `{}`. Throws `payload_too_large`,
 * `unsupported_media_type` or `invalid_request`.
 */
export function parseJsonBody(raw: RawBody, contentType: string | undefined): Record<string, unknown> {
  if (raw.tooLarge) fail('payload_too_large', `the body is larger than ${MAX_BODY_BYTES} bytes`);
  if (raw.bytes.length === 0) return {};
  if (!isJsonMediaType(contentType)) fail('unsupported_media_type', 'the body must be application/json (UTF-8)');
  let text: string;
  // ASCII (nearly every body) needs no UTF-8 validation: the native check and a latin1 read cost a fraction of the decoder.
  if (isAscii(raw.bytes)) text = raw.bytes.toString('latin1');
  else {
    try {
      text = decoder.decode(raw.bytes);
    } catch {
      fail('invalid_request', 'the body is not valid UTF-8');
    }
  }
  if (depthExceeds(text, MAX_JSON_DEPTH)) fail('invalid_request', `JSON is nested deeper than ${MAX_JSON_DEPTH} levels`);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    fail('invalid_request', 'the body is not valid JSON');
  }
  if (!isJsonObject(value)) fail('invalid_request', 'the body must be a JSON object');
  return value;
}

function isJsonObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}
