/**
 * Test support: the Prometheus text exposition read with a parser library
 * (prom2javascript), never with regular expressions, and looked up by metric
 * name and exact label set.
 */

import assert from 'node:assert/strict';
import { getMetricsFromIterator, type PromData, type PromHistogramData, type PromMetrics } from 'prom2javascript';

export type Exposition = PromMetrics;

export function parseExposition(text: string): Promise<Exposition> {
  return getMetricsFromIterator(text.split('\n')[Symbol.iterator]());
}

function sameLabels(a: Record<string, string>, b: Record<string, string>): boolean {
  const ka = Object.keys(a);
  return ka.length === Object.keys(b).length && ka.every((k) => a[k] === b[k]);
}

/** The value of a counter or gauge sample with exactly these labels (the test fails if there is none). */
export function sample(m: Exposition, name: string, labels: Record<string, string> = {}): number {
  const family = m[name];
  assert.ok(family, `metric ${name} is exposed`);
  const d = (family.data as PromData[]).find((x) => sameLabels(x.labels, labels));
  assert.ok(d, `metric ${name}${JSON.stringify(labels)} is exposed`);
  return d.value;
}

/** A histogram's observation count for exactly these labels (0 when the series does not exist yet). */
export function histogramCount(m: Exposition, name: string, labels: Record<string, string>): number {
  const family = m[name];
  assert.ok(family, `metric ${name} is exposed`);
  assert.equal(family.type, 'histogram');
  return (family.data as PromHistogramData[]).find((x) => sameLabels(x.labels, labels))?.count ?? 0;
}

/** Every sample of a metric: its labels and value. */
export function samples(m: Exposition, name: string): PromData[] {
  const family = m[name];
  assert.ok(family, `metric ${name} is exposed`);
  return family.data as PromData[];
}
