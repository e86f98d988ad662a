/**
 * What one connection can cost (docs/operations.md, "What an anonymous
 * caller can and cannot cost you"), whoever holds it:
 *
 * - One request in flight per connection. Node's parser dispatches every
 *   request already received, pipelined ones included, and buffers each
 *   answer until the socket reaches it: 300 pipelined requests on a socket
 *   that never reads held that many answers (~120 MiB). Here a request that
 *   arrives while an earlier answer on its socket is unfinished waits, with
 *   only its parsed head, until that answer has been handed to the kernel
 *   and the socket's unsent bytes are below `MAX_UNSENT_BYTES`; a connection
 *   that pipelines more than `MAX_QUEUED_REQUESTS` ahead is cut.
 * - Answers must be taken (`LEASEHOLD_SEND_TIMEOUT_MS`): a socket whose
 *   unsent bytes make no progress for that long (no 'drain', not one byte
 *   fewer) is destroyed. A live SSE stream is one long answer: while its
 *   client reads it is never cut, however long it lasts.
 * - A refused or timed-out raw socket (408, 431, 400) gets its answer, then
 *   a short linger that reads and discards what the client still sends (so
 *   the client reads the answer instead of a reset), then is destroyed: its
 *   descriptor and its slot under `LEASEHOLD_MAX_CONNECTIONS` are freed even
 *   when the client never reads and never closes.
 *
 * The per-request cost is a few property reads and one listener: the state
 * is one object per socket, its callbacks bound once per socket.
 */

import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';

/** A queued request is dispatched only while the socket holds fewer unsent bytes than this. */
const MAX_UNSENT_BYTES = 64 * 1024;
/** A connection with more requests than this waiting behind its answer in flight is cut. */
export const MAX_QUEUED_REQUESTS = 32;
/** How long a refused socket keeps reading (and discarding) after its answer before it is destroyed. */
const REFUSAL_LINGER_MS = 1_000;

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

const CONNECTION = Symbol('leasehold.connection');
const REFUSED = Symbol('leasehold.refused');

type GuardedSocket = Socket & { [CONNECTION]?: Connection };

/** One socket's state: the answer in flight, the requests waiting behind it, and how long its unsent bytes have been stuck. */
class Connection {
  /** The answer being produced or sent (undefined: none). */
  active: ServerResponse | undefined = undefined;
  /** Waiting requests, as pairs: req, res, req, res… */
  queue: Array<IncomingMessage | ServerResponse> = [];
  /** Waiting for 'drain' before the next queued request. */
  awaitingDrain = false;
  /** Unsent bytes seen by the last sweep. */
  unsent = 0;
  /** Since when the unsent bytes have made no progress (0: nothing unsent). */
  stalledSince = 0;

  constructor(
    readonly socket: Socket,
    private readonly guard: ConnectionGuard,
  ) {
    socket.on('drain', this.drained);
    socket.once('close', this.closed);
  }

  run(req: IncomingMessage, res: ServerResponse): void {
    this.active = res;
    res.on('close', this.done);
    this.guard.handler(req, res);
  }

  /** The answer in flight is finished (or its socket closed): the next request, if the socket has room. */
  readonly done = (): void => {
    this.active = undefined;
    this.next();
  };

  next(): void {
    if (this.active !== undefined || this.queue.length === 0) return;
    const socket = this.socket;
    // The socket is ending (a `Connection: close` answer): nothing more is answered.
    if (!socket.writable) {
      this.queue = [];
      return;
    }
    if (socket.writableLength >= MAX_UNSENT_BYTES) {
      this.awaitingDrain = true;
      return;
    }
    const req = this.queue.shift() as IncomingMessage;
    const res = this.queue.shift() as ServerResponse;
    this.run(req, res);
  }

  private readonly drained = (): void => {
    this.stalledSince = 0;
    this.unsent = 0;
    if (this.awaitingDrain) {
      this.awaitingDrain = false;
      this.next();
    }
  };

  private readonly closed = (): void => {
    this.queue = [];
    this.guard.connections.delete(this);
  };
}

/**
 * Wraps a server's request handler: one request in flight per connection,
 * a bounded queue behind it, and the send timeout. `close()` stops the sweep.
 */
export class ConnectionGuard {
  /** Every connection that has sent a request and is still open (for the send timeout's sweep). */
  readonly connections = new Set<Connection>();
  private readonly timer: NodeJS.Timeout;

  constructor(
    readonly handler: Handler,
    private readonly sendTimeoutMs: number,
  ) {
    this.timer = setInterval(this.sweep, Math.max(50, Math.min(1_000, Math.floor(sendTimeoutMs / 4))));
    this.timer.unref();
  }

  /** The server's request listener. */
  readonly handle = (req: IncomingMessage, res: ServerResponse): void => {
    const socket = req.socket as GuardedSocket;
    let c = socket[CONNECTION];
    if (c === undefined) {
      c = socket[CONNECTION] = new Connection(socket, this);
      this.connections.add(c);
    }
    if (c.active === undefined && c.queue.length === 0 && socket.writableLength < MAX_UNSENT_BYTES) {
      c.run(req, res);
      return;
    }
    if (socket.destroyed) return;
    if (c.queue.length >= 2 * MAX_QUEUED_REQUESTS) {
      c.queue = [];
      socket.destroy();
      return;
    }
    c.queue.push(req, res);
    // Nothing in flight, only too many unsent bytes: wait for 'drain'.
    if (c.active === undefined) c.next();
  };

  /** Cut every socket whose unsent bytes have made no progress for the send timeout. */
  private readonly sweep = (): void => {
    const now = Date.now();
    for (const c of this.connections) {
      const unsent = c.socket.writableLength;
      if (unsent === 0) c.stalledSince = 0;
      else if (c.stalledSince === 0 || unsent < c.unsent) c.stalledSince = now;
      else if (now - c.stalledSince >= this.sendTimeoutMs) c.socket.destroy();
      c.unsent = unsent;
    }
  };

  close(): void {
    clearInterval(this.timer);
  }
}

const discard = (): void => undefined;

/**
 * Write this last answer on a raw socket, then read and discard whatever
 * the client still sends for at most REFUSAL_LINGER_MS (or until it closes
 * its side), then destroy the socket. Closing while the client is still
 * sending would reset the connection, and a reset can cost the client the
 * answer it has not read yet. A socket already refused is left to its
 * linger (Node reports a failed parser again for each chunk that follows).
 */
export function answerAndClose(socket: Duplex, answer: string): void {
  const s = socket as Duplex & { [REFUSED]?: true };
  if (s[REFUSED]) return;
  s[REFUSED] = true;
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  // Take the socket from Node's HTTP parser (a 'data' listener does: the
  // parser would refuse each further chunk again), and discard what comes.
  socket.removeAllListeners('data');
  socket.on('data', discard);
  socket.resume();
  socket.end(answer);
  const cut = setTimeout(() => socket.destroy(), REFUSAL_LINGER_MS);
  cut.unref();
  socket.once('close', () => clearTimeout(cut));
  // The client closed its side: once the answer is out, the socket goes.
  socket.once('end', () => {
    const net = socket as Partial<Socket>;
    if (typeof net.destroySoon === 'function') net.destroySoon();
    else socket.destroy();
  });
}
