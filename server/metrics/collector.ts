/**
 * MetricsCollector: the Prometheus figures (docs/operations.md "Metrics") and
 * the per-second history of the console's charts, fed from two places only:
 * the engine's change events (changes, sessions, LIST pages, the census) and
 * the API's request wrapper (one outcome per answered request). Business
 * logic never calls it. Gauges that live in the engine (waiters, streams,
 * registrations, notifications) are read when scraped.
 *
 * Active leases and sessions are kept per family from the events, starting
 * from the engine's census (published in order with the changes), so they are
 * exact across restarts without a store query per scrape.
 *
 * Labels are bounded: result, kind, action and operation come from fixed
 * sets in the code; never a route, owner, family or token.
 */

import { Counter, Gauge, Registry } from 'prom-client';
import type { LeaseEngine, StatsService, EngineEvent } from '../engine';
import { ENDING_KINDS, type EndingKind } from '@/lib/wire';
import { SummaryRecorder, type SummaryBody, type SummaryOptions } from './summary';
import { RequestHistogram } from './request-histogram';

/** What the request wrapper reports for every answered `/api/*` request. */
export interface RequestOutcome {
  /** The route table's operation name (`health`, `openapi` and `metrics` for the calls outside it). */
  operation: string;
  /** The caller's family, once authenticated. */
  family: string | undefined;
  /** The answer's code (success or error), or `client_closed` when the client left before any answer. */
  code: string;
  ok: boolean;
  /** An idempotent replay of an earlier success. */
  replayed: boolean;
  /** A successful acquire granted from the wait queue. */
  queued: boolean;
  /** The request carried a `cursor` query parameter. */
  cursor: boolean;
  /** From the request's arrival to its answer. */
  seconds: number;
}

/** Request latency buckets (seconds): sub-millisecond answers up to a 30 s wait. */
const LATENCY_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

export interface CollectorOptions {
  summary?: SummaryOptions;
}

/**
 * A counter's increments, added to its prom-client series when the registry
 * is read (its `collect`): prom-client's `inc` builds a label hash and looks
 * it up on every call, and these are counted on every request.
 */
class Tally {
  pending = 0;
  constructor(readonly series: Counter.Internal) {}

  inc(): void {
    this.pending++;
  }

  flush(): void {
    if (this.pending === 0) return;
    this.series.inc(this.pending);
    this.pending = 0;
  }
}

export class MetricsCollector {
  readonly registry = new Registry();
  readonly summary: SummaryRecorder;
  private readonly leases = new Map<string, number>();
  private readonly sessions = new Map<string, number>();
  private totalLeases = 0;
  private totalSessions = 0;
  private unsubscribe: (() => void) | undefined;

  private readonly acquire: Record<'acquired' | 'queued' | 'conflict' | 'error', Tally>;
  private readonly renew: Record<'renewed' | 'lost' | 'error', Tally>;
  private readonly release: Record<EndingKind, Tally>;
  private readonly admin: Record<'force_release' | 'revoke', Tally>;
  private readonly cursor: Record<'resume' | 'invalid', Tally>;
  private readonly examined: Counter;
  private readonly returned: Counter;
  private readonly duration: RequestHistogram;

  /** The engine's figures: the collector reads its stats service, never its parts. */
  private readonly stats: StatsService;

  constructor(engine: Pick<LeaseEngine, 'stats'>, opts: CollectorOptions = {}) {
    const stats = (this.stats = engine.stats);
    const registers = [this.registry];
    const labelled = <L extends string>(name: string, help: string, label: string, values: readonly L[]) => {
      const tallies: Tally[] = [];
      const c = new Counter({ name, help, labelNames: [label], registers, collect: () => tallies.forEach((t) => t.flush()) });
      // Every series exists from the start (a rate over a missing series is no rate at all).
      for (const v of values) tallies.push(new Tally(c.labels(v)));
      return Object.fromEntries(values.map((v, i) => [v, tallies[i]!])) as Record<L, Tally>;
    };
    this.acquire = labelled('leasehold_acquire_total', 'Acquire requests answered, by result (idempotent replays excluded).', 'result', ['acquired', 'queued', 'conflict', 'error']);
    this.renew = labelled('leasehold_renew_total', 'Renew requests answered, by result (idempotent replays excluded).', 'result', ['renewed', 'lost', 'error']);
    this.release = labelled('leasehold_release_total', 'Leases ended, by change kind.', 'kind', ENDING_KINDS);
    this.admin = labelled('leasehold_admin_actions_total', 'Operator actions that ended a lease.', 'action', ['force_release', 'revoke']);
    this.cursor = labelled('leasehold_cursor_total', 'List requests that carried a cursor: resumed, or refused as cursor_invalid.', 'result', ['resume', 'invalid']);
    for (const t of [...Object.values(this.acquire), ...Object.values(this.renew), ...Object.values(this.release), ...Object.values(this.admin), ...Object.values(this.cursor)]) t.series.inc(0);
    this.examined = new Counter({ name: 'leasehold_list_examined_total', help: 'Stored routes examined by LIST pages.', registers });
    this.returned = new Counter({ name: 'leasehold_list_returned_total', help: 'Items returned by LIST pages.', registers });
    this.duration = new RequestHistogram('leasehold_request_duration_seconds', 'API request latency, by operation (the route table’s handler name).', LATENCY_BUCKETS, registers);

    const gauge = (name: string, help: string, value: () => number) => {
      const g: Gauge = new Gauge({ name, help, registers, collect: () => g.set(value()) });
    };
    gauge('leasehold_active_leases', 'Held leases, all families.', () => this.totalLeases);
    gauge('leasehold_active_sessions', 'Live sessions, all families.', () => this.totalSessions);
    gauge('leasehold_waiters', 'Acquire requests waiting in route queues.', () => stats.waiters());
    gauge('leasehold_streams', 'Open live inventory streams.', () => stats.feed().streams);
    const subs: Gauge<'kind'> = new Gauge({
      name: 'leasehold_subscriptions',
      help: 'Registrations on open streams, by kind of selector.',
      labelNames: ['kind'],
      registers,
      collect: () => {
        const s = stats.feed();
        subs.set({ kind: 'exact' }, s.exact);
        subs.set({ kind: 'wildcard' }, s.wildcard);
      },
    });
    // Totals the engine keeps since start, exposed as counters.
    const total = (name: string, help: string, value: () => number) => {
      let last = 0;
      const c: Counter = new Counter({
        name,
        help,
        registers,
        collect: () => {
          const v = value();
          c.inc(Math.max(0, v - last));
          last = Math.max(last, v);
        },
      });
    };
    total('leasehold_notifications_total', 'Change and renewal events queued for delivery (one per matching registration).', () => stats.feed().notifications);
    total('leasehold_notifications_dropped_total', 'Change and renewal events discarded when a stream ended unread (overflow).', () => stats.feed().dropped);
    total('leasehold_stream_overflows_total', 'Streams ended with overflow (slow_consumer or resync).', () => stats.feed().overflows);
    total('leasehold_stream_resumes_total', 'Streams resumed with a replay from the change log (even an empty one).', () => stats.feed().resumes);
    total('leasehold_replayed_events_total', 'Change events sent by replays (one per matching registration).', () => stats.feed().replayed);
    const resyncs: Counter<'reason'> = new Counter({
      name: 'leasehold_stream_resyncs_total',
      help: 'Resuming streams sent resync instead of a replay, by reason (horizon, epoch, too_many).',
      labelNames: ['reason'],
      registers,
      collect: () => {
        const now = stats.feed().resyncs;
        for (const reason of ['horizon', 'epoch', 'too_many'] as const) {
          resyncs.inc({ reason }, Math.max(0, now[reason] - lastResyncs[reason]));
          lastResyncs[reason] = Math.max(lastResyncs[reason], now[reason]);
        }
      },
    });
    const lastResyncs = { horizon: 0, epoch: 0, too_many: 0 };
    for (const reason of ['horizon', 'epoch', 'too_many']) resyncs.inc({ reason }, 0);
    // Read from the store at scrape, one read per gauge (the registry collects them concurrently).
    const perFamily = (name: string, help: string, value: (f: Awaited<ReturnType<StatsService['changeLog']>>[number]) => number) => {
      const g: Gauge<'family'> = new Gauge({
        name,
        help,
        labelNames: ['family'],
        registers,
        collect: async () => {
          // An unavailable store leaves the last values.
          await stats.changeLog().then(
            (stats) => {
              g.reset();
              for (const f of stats) g.set({ family: f.family }, value(f));
            },
            () => undefined,
          );
        },
      });
    };
    perFamily('leasehold_change_log_changes', 'Changes held in each family’s change log (read from the store).', (f) => f.rows);
    perFamily('leasehold_change_log_horizon', 'Each family’s change-log horizon: a stream resuming from a lower revision is sent resync (horizon).', (f) => f.horizon);
    total('leasehold_invalid_credentials_total', 'Requests refused as invalid_credential.', () => stats.audit.invalid_credential);
    total(
      'leasehold_acquisitions_shed_total',
      'Acquisitions refused (rate_limited) while their family was more than LEASEHOLD_ADMIT_QUEUE_MS behind on its work (docs/design.md "Admission").',
      () => stats.audit.acquire_shed,
    );
    total(
      'leasehold_anonymous_refusals_total',
      'Refusals of callers with no token (e.g. a cross-site login or logout): counted and logged at most every 10 s, never audited row by row.',
      () => stats.audit.anonymous_refusal,
    );
    total('leasehold_lock_delay_refusals_total', 'Acquires refused because their route was in lock-delay (docs/policies.md).', () => stats.delayRefusals);
    const delayed: Gauge = new Gauge({
      name: 'leasehold_routes_in_lock_delay',
      help: 'Free routes in lock-delay now, every family (read from the store).',
      registers,
      collect: async () => {
        // An unavailable store leaves the last value.
        await stats.routesInDelay().then((n) => delayed.set(n), () => undefined);
      },
    });
    total('leasehold_audit_dropped_total', 'Audit events lost to a full buffer while the store was unavailable.', () => stats.audit.dropped);

    this.summary = new SummaryRecorder(
      {
        leases: (f) => this.leases.get(f) ?? 0,
        sessions: (f) => this.sessions.get(f) ?? 0,
        waiters: (f) => stats.waiters(f),
        feed: (f) => stats.familyFeed(f),
      },
      opts.summary,
    );
  }

  /** Subscribe to the engine's events, take its census, start the per-second history. */
  async start(): Promise<void> {
    this.unsubscribe ??= this.stats.subscribe((e) => this.onEvent(e));
    await this.stats.census();
    this.summary.start();
  }

  /** Unsubscribe and stop the history's timer. */
  stop(): void {
    this.unsubscribe?.();
    this.unsubscribe = undefined;
    this.summary.stop();
  }

  /** The Prometheus text exposition. */
  exposition(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  /** The console's series for one family (and latency, instance-wide). */
  summaryOf(family: string, windowS: number): SummaryBody {
    return this.summary.read(family, windowS);
  }

  /** One answered request, from the API wrapper (read at once, never kept). */
  observe(o: RequestOutcome): void {
    this.duration.observe(o.operation, o.seconds);
    this.summary.latency(o.operation, o.seconds, o.ok);
    if (o.cursor) {
      if (o.ok) this.cursor.resume.inc();
      else if (o.code === 'cursor_invalid') this.cursor.invalid.inc();
    }
    if (o.replayed) return;
    if (o.operation === 'lease_acquire') {
      const result = o.ok ? (o.queued ? 'queued' : 'acquired') : o.code === 'lease_conflict' ? 'conflict' : 'error';
      this.acquire[result].inc();
      if (o.family !== undefined && result !== 'error') this.summary.count(o.family, result === 'conflict' ? 'conflicts_per_s' : 'acquisitions_per_s');
    } else if (o.operation === 'lease_renew') {
      this.renew[o.ok ? 'renewed' : o.code === 'lease_lost' ? 'lost' : 'error'].inc();
    }
  }

  private onEvent(e: EngineEvent): void {
    switch (e.type) {
      case 'change':
        if (e.change === 'acquired') {
          this.adjust(this.leases, e.family, 1);
          this.totalLeases++;
          break;
        }
        this.adjust(this.leases, e.family, -1);
        this.totalLeases--;
        // Gauges follow the whole universe; counters count what this
        // instance did (another instance counts its own changes).
        if (e.remote) break;
        this.release[e.change].inc();
        this.summary.count(e.family, 'releases_per_s');
        if (e.change === 'force_released') this.admin.force_release.inc();
        else if (e.change === 'revoked') this.admin.revoke.inc();
        break;
      case 'session_opened':
        this.adjust(this.sessions, e.family, 1);
        this.totalSessions++;
        this.summary.track(e.family);
        break;
      case 'session_closed':
      case 'session_expired':
        this.adjust(this.sessions, e.family, -1);
        this.totalSessions--;
        break;
      case 'listed':
        if (e.remote) break;
        this.examined.inc(e.examined);
        this.returned.inc(e.returned);
        break;
      case 'census':
        this.leases.clear();
        this.sessions.clear();
        this.totalLeases = 0;
        this.totalSessions = 0;
        for (const f of e.families) {
          this.adjust(this.leases, f.family, f.leases);
          this.adjust(this.sessions, f.family, f.sessions);
          this.totalLeases += f.leases;
          this.totalSessions += f.sessions;
        }
        // The busiest families get a history from the start.
        for (const f of [...e.families].sort((a, b) => b.leases + b.sessions - (a.leases + a.sessions)).slice(0, this.summary.maxFamilies)) this.summary.track(f.family);
        break;
      default:
        break;
    }
  }

  private adjust(m: Map<string, number>, family: string, by: number): void {
    const n = (m.get(family) ?? 0) + by;
    if (n === 0) m.delete(family);
    else m.set(family, n);
  }
}
