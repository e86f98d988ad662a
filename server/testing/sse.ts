/**
 * Test and benchmark support: a real Server-Sent Events client over
 * node:http (no EventSource polyfill, no mock), which parses the stream as
 * the SSE specification says and keeps every event with its arrival time.
 */

import { Agent, request as httpRequest, type IncomingMessage } from 'node:http';

export interface SseEvent {
  event: string;
  id?: string;
  /** The data parsed as JSON. */
  data: any;
  /** performance.now() when the event was complete. */
  at: number;
}

export interface SseOpenOptions {
  token?: string;
  headers?: Record<string, string>;
  /** Which events to keep in `events` (all by default); every event is counted in `counts`. */
  keep?: (event: string) => boolean;
}

/** A refused stream: the JSON error answer. */
export class SseRefused extends Error {
  constructor(
    readonly status: number,
    readonly body: any,
  ) {
    super(`stream refused: ${status} ${JSON.stringify(body)}`);
  }
}

const agent = new Agent({ keepAlive: false, maxSockets: Infinity });

export class SseClient {
  readonly events: SseEvent[] = [];
  /** Events received, by type (kept or not). */
  readonly counts = new Map<string, number>();
  /** Keepalive comments seen. */
  heartbeats = 0;
  ended = false;
  /** Resolves when the server ends the stream or the connection drops. */
  readonly done: Promise<void>;
  private buffer = '';
  private pending: Partial<SseEvent> & { dataLines?: string[] } = {};
  private waiters: Array<() => void> = [];
  private finish!: () => void;

  private constructor(
    readonly res: IncomingMessage,
    readonly headers: IncomingMessage['headers'],
    private readonly keep: (event: string) => boolean = () => true,
  ) {
    this.done = new Promise((r) => (this.finish = r));
    res.setEncoding('utf8');
    res.on('data', (chunk: string) => this.feed(chunk));
    const end = () => {
      if (this.ended) return;
      this.ended = true;
      this.finish();
      this.wake();
    };
    res.on('end', end);
    res.on('close', end);
    res.on('error', end);
  }

  /** Open `path` on `baseUrl`; resolves once the stream's headers arrived, or rejects with SseRefused. */
  static open(baseUrl: string, path: string, opts: SseOpenOptions = {}): Promise<SseClient> {
    const url = new URL(baseUrl);
    const headers: Record<string, string> = { Accept: 'text/event-stream', ...opts.headers };
    if (opts.token) headers.Authorization = `Bearer ${opts.token}`;
    return new Promise((resolve, reject) => {
      const req = httpRequest({ host: url.hostname, port: url.port, method: 'GET', path, headers, agent }, (res) => {
        if (res.statusCode !== 200) {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (c: string) => (text += c));
          res.on('end', () => {
            let body: unknown = text;
            try {
              body = JSON.parse(text);
            } catch {
              // keep the text
            }
            reject(new SseRefused(res.statusCode ?? 0, body));
          });
          return;
        }
        resolve(new SseClient(res, res.headers, opts.keep));
      });
      req.on('error', reject);
      req.end();
    });
  }

  /** The first event (already received or to come) matching `pred`, or a timeout error. */
  async waitFor(pred: (e: SseEvent) => boolean, timeoutMs = 5_000, what = 'event'): Promise<SseEvent> {
    // Every event is asked again at each wake: a predicate may also read the client's counters.
    let hit: SseEvent | undefined;
    await this.until(() => (hit = this.events.find(pred)) !== undefined, timeoutMs, what);
    return hit!;
  }

  /** Wait until `n` events match `pred` (each event is looked at once, however many arrive). */
  async waitForCount(pred: (e: SseEvent) => boolean, n: number, timeoutMs = 5_000): Promise<SseEvent[]> {
    const hits: SseEvent[] = [];
    let scanned = 0;
    await this.until(() => {
      for (; scanned < this.events.length; scanned++) if (pred(this.events[scanned]!)) hits.push(this.events[scanned]!);
      return hits.length >= n;
    }, timeoutMs, `${n} matching events`);
    return hits;
  }

  /** Wait, woken by each event, until `done()` holds; fails when the stream ends first or at the timeout. */
  private async until(done: () => boolean, timeoutMs: number, what: string): Promise<void> {
    const deadline = performance.now() + timeoutMs;
    for (;;) {
      if (done()) return;
      if (this.ended) throw new Error(`stream ended before ${what}; got ${this.describe()}`);
      const left = deadline - performance.now();
      if (left <= 0) throw new Error(`timed out waiting for ${what}; got ${this.describe()}`);
      await new Promise<void>((r) => {
        const t = setTimeout(r, left);
        this.waiters.push(() => {
          clearTimeout(t);
          r();
        });
      });
    }
  }

  /** Events of one type. */
  of(event: string): SseEvent[] {
    return this.events.filter((e) => e.event === event);
  }

  /** Stop reading: the server's writes back up (a slow consumer). */
  pause(): void {
    this.res.pause();
  }

  resume(): void {
    this.res.resume();
  }

  /** Drop the connection. */
  close(): void {
    this.res.destroy();
  }

  private describe(): string {
    return JSON.stringify(this.events.slice(-5).map((e) => [e.event, e.data]));
  }

  private wake(): void {
    for (const w of this.waiters.splice(0)) w();
  }

  private feed(chunk: string): void {
    this.buffer += chunk;
    let nl: number;
    let got = false;
    while ((nl = this.buffer.indexOf('\n')) >= 0) {
      let line = this.buffer.slice(0, nl);
      this.buffer = this.buffer.slice(nl + 1);
      if (line.endsWith('\r')) line = line.slice(0, -1);
      if (line === '') {
        const event = this.pending.event ?? 'message';
        if (this.pending.dataLines) {
          this.counts.set(event, (this.counts.get(event) ?? 0) + 1);
          got = true;
        }
        if (this.pending.dataLines && this.keep(event)) {
          const text = this.pending.dataLines.join('\n');
          let data: unknown = text;
          try {
            data = JSON.parse(text);
          } catch {
            // keep the text
          }
          this.events.push({ event, id: this.pending.id, data, at: performance.now() });
        }
        this.pending = {};
        continue;
      }
      if (line.startsWith(':')) {
        this.heartbeats++;
        continue;
      }
      const colon = line.indexOf(':');
      const field = colon < 0 ? line : line.slice(0, colon);
      let value = colon < 0 ? '' : line.slice(colon + 1);
      if (value.startsWith(' ')) value = value.slice(1);
      if (field === 'event') this.pending.event = value;
      else if (field === 'id') this.pending.id = value;
      else if (field === 'data') (this.pending.dataLines ??= []).push(value);
    }
    if (got) this.wake();
  }
}
