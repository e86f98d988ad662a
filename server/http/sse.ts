/**
 * Server-Sent Events framing for the live feed: one SseSink per stream, over
 * Node's ServerResponse. It writes straight to the socket while the socket
 * takes data, queues while it pushes back, and reports an overflow when the
 * unsent data passes 1,024 events or 1 MiB (docs/semantics.md §8), so a slow
 * reader costs bounded memory and never slows the engine.
 */

import type { ServerResponse } from 'node:http';
import type { FeedFrame, FeedSink } from '../engine';

interface SseLimits {
  maxEvents: number;
  maxBytes: number;
  /** How long an ended stream may take to flush before its socket is cut. */
  lingerMs: number;
}

const DEFAULT_SSE_LIMITS: SseLimits = { maxEvents: 1_024, maxBytes: 1 << 20, lingerMs: 15_000 };

/** Bytes a frame takes on the wire, near enough for the bound (data is ASCII JSON but for metadata). */
function frameSize(f: FeedFrame): number {
  return f.json.length + (f.subscriptionId ? f.subscriptionId.length + 22 : 0) + 32;
}

/** One frame as SSE text: `event:`, `id:` for changes, one `data:` line (JSON has no raw newlines). */
function formatFrame(f: FeedFrame): string {
  const data = f.subscriptionId === undefined ? f.json : `{"subscription_id":"${f.subscriptionId}",${f.json.slice(1)}`;
  return f.id === undefined ? `event: ${f.event}\ndata: ${data}\n\n` : `event: ${f.event}\nid: ${f.id}\ndata: ${data}\n\n`;
}

export class SseSink implements FeedSink {
  private queue: FeedFrame[] = [];
  private head = 0;
  private queuedBytes = 0;
  private blocked = false;
  private started = false;
  private ended = false;
  private readonly closeListeners: Array<() => void> = [];
  private roomListeners: Array<() => void> = [];

  constructor(
    private readonly res: ServerResponse,
    /** Extra response headers (correlation id, CORS). */
    private readonly headers: Record<string, string>,
    private readonly limits: SseLimits = DEFAULT_SSE_LIMITS,
  ) {
    res.once('close', () => {
      this.ended = true;
      this.queue = [];
      this.roomListeners = [];
      for (const l of this.closeListeners.splice(0)) l();
    });
  }

  onClose(listener: () => void): void {
    if (this.res.destroyed) listener();
    else this.closeListeners.push(listener);
  }

  push(frame: FeedFrame): boolean {
    if (this.ended) return true;
    this.start();
    if (!this.blocked && this.head === this.queue.length) {
      this.write(frame);
      return true;
    }
    this.queue.push(frame);
    this.queuedBytes += frameSize(frame);
    return this.queue.length - this.head <= this.limits.maxEvents && this.queuedBytes + this.res.writableLength <= this.limits.maxBytes;
  }

  /**
   * A replay may fill half the queue's bound, so the live events that follow
   * it still fit; it continues as the client reads.
   */
  room(): number {
    return Math.floor(this.limits.maxEvents / 2) - (this.queue.length - this.head);
  }

  whenRoom(listener: () => void): void {
    if (this.ended) return;
    this.roomListeners.push(listener);
  }

  heartbeat(): void {
    if (this.started && !this.ended && !this.blocked) this.res.write(': hb\n\n');
  }

  end(last: FeedFrame): number {
    if (this.ended) return 0;
    let discarded = 0;
    for (let i = this.head; i < this.queue.length; i++) if (this.queue[i]!.subscriptionId !== undefined) discarded++;
    this.queue = [];
    this.head = 0;
    this.queuedBytes = 0;
    this.start();
    this.ended = true;
    this.res.end(formatFrame(last));
    // A reader that never reads would hold the socket's buffer forever.
    const cut = setTimeout(() => this.res.destroy(), this.limits.lingerMs);
    cut.unref();
    this.res.once('close', () => clearTimeout(cut));
    return discarded;
  }

  private start(): void {
    if (this.started) return;
    this.started = true;
    this.res.writeHead(200, {
      'Content-Type': 'text/event-stream; charset=utf-8',
      'Cache-Control': 'no-cache, no-transform',
      'X-Accel-Buffering': 'no',
      'X-Content-Type-Options': 'nosniff',
      ...this.headers,
    });
    this.res.socket?.setNoDelay(true);
  }

  private write(frame: FeedFrame): void {
    if (!this.res.write(formatFrame(frame))) {
      this.blocked = true;
      this.res.once('drain', this.flush);
    }
  }

  /** The socket drained: write queued frames until it pushes back again. */
  private readonly flush = (): void => {
    this.blocked = false;
    while (!this.ended && !this.blocked && this.head < this.queue.length) {
      const f = this.queue[this.head]!;
      this.queue[this.head++] = undefined as unknown as FeedFrame;
      this.queuedBytes -= frameSize(f);
      this.write(f);
    }
    if (this.head === this.queue.length) {
      this.queue = [];
      this.head = 0;
    } else if (this.head > this.limits.maxEvents) {
      this.queue = this.queue.slice(this.head);
      this.head = 0;
    }
    if (!this.ended && this.roomListeners.length > 0 && this.room() > 0) for (const l of this.roomListeners.splice(0)) l();
  };
}
