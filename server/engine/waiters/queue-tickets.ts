/**
 * Queue tickets (CONTRACT §20, docs/design.md "Queue tickets"): what an
 * acquire whose wait ended without a grant gets back, to continue its place
 * in the route's FIFO queue with its next request.
 *
 * A ticket names the place (its random id) and is bound to the session and
 * the route by a MAC under a key derived from the server secret, which every
 * instance sharing a store has: a ticket issued by one instance is taken by
 * any other. It says nothing else (the session's hash is not in it); whether
 * the place is still kept is the queue's to say, not the ticket's.
 *
 * Wire form: `qt_` + the place id + `.` + base64url(HMAC-SHA256)[0..22].
 */

import { createHmac, hkdfSync, timingSafeEqual } from 'node:crypto';
import { fail } from '../core/errors';

const PREFIX = 'qt_';
const MAC_CHARS = 22;
const PLACE_RE = /^[A-Za-z0-9_-]{8,64}$/;
/** Longest ticket accepted: longer is malformed without a look. */
export const MAX_TICKET_CHARS = 128;

export class QueueTickets {
  private key: Buffer | undefined;

  /** Derive the key from the server secret (at start, once the secret is known). */
  setSecret(secret: Buffer): void {
    this.key = Buffer.from(hkdfSync('sha256', secret, Buffer.from('leasehold'), Buffer.from('leasehold queue ticket v1 hmac-sha256'), 32));
  }

  private mac(family: string, route: string, sessionHash: string, place: string): string {
    if (!this.key) throw new Error('queue tickets used before the engine started');
    return createHmac('sha256', this.key).update(`${family}\n${route}\n${sessionHash}\n${place}`).digest('base64url').slice(0, MAC_CHARS);
  }

  /** The ticket of a place, for this session and route. */
  issue(family: string, route: string, sessionHash: string, place: string): string {
    return `${PREFIX}${place}.${this.mac(family, route, sessionHash, place)}`;
  }

  /**
   * The place a ticket names, if it was issued for this session and route;
   * otherwise `invalid_request` naming `queue_ticket` (a malformed ticket,
   * or another session's or route's: the two are not told apart).
   */
  placeOf(ticket: string, family: string, route: string, sessionHash: string): string {
    const dot = ticket.lastIndexOf('.');
    const place = ticket.slice(PREFIX.length, dot);
    if (ticket.length > MAX_TICKET_CHARS || !ticket.startsWith(PREFIX) || dot < 0 || !PLACE_RE.test(place)) {
      fail('invalid_request', 'queue_ticket: is not a queue ticket');
    }
    const given = Buffer.from(ticket.slice(dot + 1));
    const want = Buffer.from(this.mac(family, route, sessionHash, place));
    if (given.length !== want.length || !timingSafeEqual(given, want)) {
      fail('invalid_request', 'queue_ticket: was not issued to this session for this route');
    }
    return place;
  }
}
