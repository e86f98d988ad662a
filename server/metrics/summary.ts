/**
 * The per-second history behind `GET /api/v1/metrics/summary` (the console's
 * charts): one point per second for the last `capacity` seconds (15 minutes),
 * per family for the figures that have a family and instance-wide for request
 * latency. Memory is bounded: every history is a SecondRing allocated once,
 * at most `maxFamilies` families and `maxOperations` operations are tracked
 * (the least recently active family makes room for a new one), and latency
 * quantiles come from a fixed reservoir of samples per second.
 */

import { SecondRing } from './second-ring';

/** Per-family series, in ring order. Rates are per second; the others are gauges sampled each second. */
export const FAMILY_SERIES = [
  'acquisitions_per_s',
  'conflicts_per_s',
  'releases_per_s',
  'active_leases',
  'active_sessions',
  'waiters',
  'notifications_per_s',
  'notifications_dropped_per_s',
] as const;

type FamilySeries = (typeof FAMILY_SERIES)[number];
type CountedSeries = 'acquisitions_per_s' | 'conflicts_per_s' | 'releases_per_s';

const IDX = Object.fromEntries(FAMILY_SERIES.map((name, i) => [name, i])) as Record<FamilySeries, number>;
const GAUGES: readonly FamilySeries[] = ['active_leases', 'active_sessions', 'waiters'];

/** Live figures of one family, read each second. */
export interface FamilySource {
  leases(family: string): number;
  sessions(family: string): number;
  waiters(family: string): number;
  /** Notifications and drops since start (monotonic). */
  feed(family: string): { notifications: number; dropped: number };
}

export interface SummaryOptions {
  /** Seconds of history (900: 15 minutes). */
  capacity?: number;
  maxFamilies?: number;
  maxOperations?: number;
  /** Latency samples kept per operation per second (a reservoir beyond that). */
  samplesPerSecond?: number;
  /** Wall-clock time (epoch ms). */
  now?: () => number;
}

export interface SummaryBody {
  window_s: number;
  step_s: number;
  series: Record<string, Array<[number, number]>>;
}

interface FamilyTrack {
  ring: SecondRing;
  /** The first second this family was tracked: nothing is known before it. */
  since: number;
  lastActive: number;
  /** The feed's totals at the last finished second. */
  notifications: number;
  dropped: number;
}

interface OperationTrack {
  /** p50 and p99 (ms), requests and error answers per second (OP_COLUMNS). */
  ring: SecondRing;
  /** The second the samples belong to. */
  sec: number;
  samples: Float64Array;
  /** Samples offered this second (may exceed the reservoir): the second's requests. */
  seen: number;
  /** Of those, answers with status `error`. */
  errors: number;
}

/** An operation's columns in its ring. */
const OP_P50 = 0;
const OP_P99 = 1;
const OP_REQUESTS = 2;
const OP_ERRORS = 3;
const OP_COLUMNS = 4;

export class SummaryRecorder {
  readonly capacity: number;
  readonly maxFamilies: number;
  readonly maxOperations: number;
  private readonly samplesPerSecond: number;
  private readonly now: () => number;
  private readonly families = new Map<string, FamilyTrack>();
  private readonly operations = new Map<string, OperationTrack>();
  /** The last second whose gauges were sampled. */
  private finished: number;
  private timer: ReturnType<typeof setTimeout> | undefined;

  constructor(
    private readonly source: FamilySource,
    opts: SummaryOptions = {},
  ) {
    this.capacity = opts.capacity ?? 900;
    this.maxFamilies = opts.maxFamilies ?? 64;
    this.maxOperations = opts.maxOperations ?? 64;
    this.samplesPerSecond = opts.samplesPerSecond ?? 512;
    this.now = opts.now ?? Date.now;
    this.finished = this.second() - 1;
  }

  private second(): number {
    return Math.floor(this.now() / 1000);
  }

  /** Sample every second, just after each second ends (the timer does not keep the process alive). */
  start(): void {
    if (this.timer) return;
    const schedule = () => {
      this.timer = setTimeout(
        () => {
          this.tick();
          schedule();
        },
        1000 - (this.now() % 1000) + 5,
      );
      this.timer.unref?.();
    };
    schedule();
  }

  stop(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }

  /** Families and operations tracked now (each holds a fixed amount of memory). */
  get tracked(): { families: number; operations: number } {
    return { families: this.families.size, operations: this.operations.size };
  }

  /** Bytes held by every history: bounded by the limits, whatever the load. */
  get bytes(): number {
    let n = 0;
    for (const f of this.families.values()) n += f.ring.bytes;
    for (const o of this.operations.values()) n += o.ring.bytes + o.samples.byteLength;
    return n;
  }

  /** Start tracking a family (making room if needed); returns its track. */
  track(family: string): FamilyTrack {
    const sec = this.second();
    let f = this.families.get(family);
    if (!f) {
      if (this.families.size >= this.maxFamilies) {
        let oldest: string | undefined;
        let at = Infinity;
        for (const [name, t] of this.families) if (t.lastActive < at) (at = t.lastActive), (oldest = name);
        this.families.delete(oldest!);
      }
      const feed = this.source.feed(family);
      f = { ring: new SecondRing(this.capacity, FAMILY_SERIES.length), since: sec, lastActive: sec, notifications: feed.notifications, dropped: feed.dropped };
      this.families.set(family, f);
    }
    f.lastActive = sec;
    return f;
  }

  /** Count `n` of a per-second figure for a family, in the current second. */
  count(family: string, series: CountedSeries, n = 1): void {
    const f = this.track(family);
    f.ring.add(f.lastActive, IDX[series], n);
  }

  /** One request's latency (seconds), for its operation's p50 and p99, counted (and as an error answer unless `ok`). */
  latency(operation: string, seconds: number, ok = true): void {
    const sec = this.second();
    let o = this.operations.get(operation);
    if (!o) {
      if (this.operations.size >= this.maxOperations) return;
      o = { ring: new SecondRing(this.capacity, OP_COLUMNS), sec, samples: new Float64Array(this.samplesPerSecond), seen: 0, errors: 0 };
      this.operations.set(operation, o);
    }
    if (o.sec !== sec) {
      this.finishOperation(o);
      o.sec = sec;
    }
    const ms = seconds * 1000;
    if (o.seen < o.samples.length) o.samples[o.seen] = ms;
    else {
      // Reservoir sampling: every sample of the second is kept with equal probability.
      const j = Math.floor(Math.random() * (o.seen + 1));
      if (j < o.samples.length) o.samples[j] = ms;
    }
    o.seen++;
    if (!ok) o.errors++;
  }

  /**
   * Close every second that has ended: sample the gauges, take the feed's
   * counts since the last sample, and store each operation's quantiles.
   * Seconds the timer missed (a blocked event loop) get the same gauges.
   */
  tick(): void {
    const last = this.second() - 1;
    if (last <= this.finished) return;
    const from = Math.max(this.finished + 1, last - this.capacity + 1);
    for (const [family, f] of this.families) {
      const values = [this.source.leases(family), this.source.sessions(family), this.source.waiters(family)];
      for (let s = Math.max(from, f.since); s <= last; s++) {
        f.ring.touch(s);
        GAUGES.forEach((g, i) => f.ring.set(s, IDX[g], values[i]!));
      }
      if (last >= f.since) {
        const feed = this.source.feed(family);
        f.ring.add(last, IDX.notifications_per_s, feed.notifications - f.notifications);
        f.ring.add(last, IDX.notifications_dropped_per_s, feed.dropped - f.dropped);
        f.notifications = feed.notifications;
        f.dropped = feed.dropped;
      }
    }
    for (const o of this.operations.values()) if (o.sec <= last) this.finishOperation(o);
    this.finished = last;
  }

  private finishOperation(o: OperationTrack): void {
    if (o.seen === 0) return;
    const q = quantiles(o.samples.subarray(0, Math.min(o.seen, o.samples.length)));
    o.ring.set(o.sec, OP_P50, q.p50);
    o.ring.set(o.sec, OP_P99, q.p99);
    o.ring.set(o.sec, OP_REQUESTS, o.seen);
    o.ring.set(o.sec, OP_ERRORS, o.errors);
    o.seen = 0;
    o.errors = 0;
  }

  /**
   * The last `windowS` seconds of a family's series (the current second
   * included, as it stands) and of every operation's latency. Rates have a
   * point for every second since the family was tracked; gauges for every
   * second sampled; latency for every second that had requests.
   */
  read(family: string, windowS: number): SummaryBody {
    this.tick();
    const f = this.track(family);
    const now = this.second();
    const from = Math.max(now - Math.min(windowS, this.capacity) + 1, f.since);
    const series: Record<string, Array<[number, number]>> = {};
    const feed = this.source.feed(family);
    const live: Record<FamilySeries, number | undefined> = {
      acquisitions_per_s: undefined,
      conflicts_per_s: undefined,
      releases_per_s: undefined,
      active_leases: this.source.leases(family),
      active_sessions: this.source.sessions(family),
      waiters: this.source.waiters(family),
      notifications_per_s: feed.notifications - f.notifications,
      notifications_dropped_per_s: feed.dropped - f.dropped,
    };
    for (const name of FAMILY_SERIES) {
      const gauge = GAUGES.includes(name);
      const points: Array<[number, number]> = [];
      for (let s = from; s < now; s++) {
        const v = f.ring.get(s, IDX[name]);
        if (v !== undefined) points.push([s * 1000, v]);
        else if (!gauge) points.push([s * 1000, 0]);
      }
      // The current second as it stands: a gauge's live value, a rate's count so far.
      points.push([now * 1000, gauge ? live[name]! : (f.ring.get(now, IDX[name]) ?? 0) + (live[name] ?? 0)]);
      series[name] = points;
    }

    const opFrom = now - Math.min(windowS, this.capacity) + 1;
    for (const [op, o] of [...this.operations].sort((a, b) => (a[0] < b[0] ? -1 : 1))) {
      const p50: Array<[number, number]> = [];
      const p99: Array<[number, number]> = [];
      const requests: Array<[number, number]> = [];
      const errors: Array<[number, number]> = [];
      for (let s = opFrom; s < now; s++) {
        const a = o.ring.get(s, OP_P50);
        if (a !== undefined) {
          p50.push([s * 1000, round3(a)]);
          p99.push([s * 1000, round3(o.ring.get(s, OP_P99)!)]);
          requests.push([s * 1000, o.ring.get(s, OP_REQUESTS)!]);
          errors.push([s * 1000, o.ring.get(s, OP_ERRORS)!]);
        }
      }
      if (o.sec === now && o.seen > 0) {
        const q = quantiles(o.samples.subarray(0, Math.min(o.seen, o.samples.length)));
        p50.push([now * 1000, round3(q.p50)]);
        p99.push([now * 1000, round3(q.p99)]);
        requests.push([now * 1000, o.seen]);
        errors.push([now * 1000, o.errors]);
      }
      if (p50.length > 0) {
        series[`latency_p50_ms.${op}`] = p50;
        series[`latency_p99_ms.${op}`] = p99;
        series[`requests_per_s.${op}`] = requests;
        series[`errors_per_s.${op}`] = errors;
      }
    }
    return { window_s: windowS, step_s: 1, series };
  }
}

const round3 = (x: number) => Math.round(x * 1000) / 1000;

/** Nearest-rank p50 and p99 of the samples (sorted in place). */
function quantiles(samples: Float64Array): { p50: number; p99: number } {
  samples.sort();
  const at = (p: number) => samples[Math.min(samples.length - 1, Math.max(0, Math.ceil(p * samples.length) - 1))]!;
  return { p50: at(0.5), p99: at(0.99) };
}
