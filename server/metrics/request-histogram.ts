/**
 * The request-latency histogram (`leasehold_request_duration_seconds`, one
 * series per operation), kept by hand. prom-client's labelled `observe`
 * builds a label-hash string, looks it up in a dictionary and turns the
 * bucket bound into a property name on every request; here an observation
 * is one Map hit on the operation's (constant) name and an array increment.
 * What the registry reads (`getForPromString`, `get`) has the shape of
 * prom-client's Histogram exactly, so the exposition is the same text
 * (server/metrics/request-histogram.test.ts compares the two).
 */

import type { Registry } from 'prom-client';

interface Series {
  labels: { operation: string };
  /** Observations per bucket (not cumulative), by bound. */
  counts: number[];
  sum: number;
  count: number;
}

/** One exported value, as prom-client's Histogram gives it to the registry. */
interface Value {
  labels: Record<string, string | number>;
  sharedLabels?: Record<string, string>;
  value: number;
  metricName: string;
  exemplar: null | undefined;
}

export class RequestHistogram {
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  private readonly series = new Map<string, Series>();

  constructor(
    readonly name: string,
    readonly help: string,
    private readonly upperBounds: readonly number[],
    registers: readonly Registry[],
  ) {
    for (const r of registers) r.registerMetric(this as unknown as Parameters<Registry['registerMetric']>[0]);
  }

  /** One observation (seconds) of an operation; a value that is not a finite number is ignored. */
  observe(operation: string, value: number): void {
    if (!Number.isFinite(value)) return;
    let s = this.series.get(operation);
    if (s === undefined) this.series.set(operation, (s = { labels: { operation }, counts: this.upperBounds.map(() => 0), sum: 0, count: 0 }));
    const bounds = this.upperBounds;
    for (let i = 0; i < bounds.length; i++) {
      if (value <= bounds[i]!) {
        s.counts[i]!++;
        break;
      }
    }
    s.sum += value;
    s.count += 1;
  }

  /** The series as prom-client's Histogram exports them: cumulative buckets, `+Inf`, sum and count, per operation in first-seen order. */
  async getForPromString(): Promise<{ name: string; help: string; type: string; values: Value[]; aggregator: string }> {
    const bucket = `${this.name}_bucket`;
    const values: Value[] = [];
    for (const s of this.series.values()) {
      let acc = 0;
      for (let i = 0; i < this.upperBounds.length; i++) {
        acc += s.counts[i]!;
        values.push({ labels: { le: this.upperBounds[i]! }, sharedLabels: s.labels, value: acc, metricName: bucket, exemplar: null });
      }
      values.push(
        { labels: { le: '+Inf' }, sharedLabels: s.labels, value: s.count, metricName: bucket, exemplar: null },
        { labels: {}, sharedLabels: s.labels, value: s.sum, metricName: `${this.name}_sum`, exemplar: undefined },
        { labels: {}, sharedLabels: s.labels, value: s.count, metricName: `${this.name}_count`, exemplar: undefined },
      );
    }
    return { name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator };
  }

  /** The same values with their labels merged (the registry's JSON form). */
  async get(): Promise<{ name: string; help: string; type: string; values: Value[]; aggregator: string }> {
    const data = await this.getForPromString();
    data.values = data.values.map(({ sharedLabels, ...v }) => ({ ...v, labels: { ...v.labels, ...sharedLabels } }));
    return data;
  }

  reset(): void {
    this.series.clear();
  }
}
