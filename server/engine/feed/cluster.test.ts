/**
 * The cluster's publication order, against a scripted bus: other instances'
 * changes reach the hub in revision order, a revision that never arrives
 * resyncs the family's streams, a lost channel resyncs every stream, and
 * remote events are marked (never audited by this instance).
 */

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { selectorOrThrow } from '@/lib/selector';
import type { Bus, BusListener } from '../../store/types';
import { ManualClock } from '../../testing/harness';
import { Cluster, type ClusterOptions } from './cluster';
import { EventHub, type EngineEvent, type LeaseChange } from '../core/events';
import { FeedHub } from './feed';
import { RecordingSink } from '../../testing/feed-sink';

class ScriptedBus implements Bus {
  readonly instanceId = 'i_this00000000';
  listener!: BusListener;
  sent: string[] = [];
  listen(l: BusListener): void {
    this.listener = l;
  }
  async send(m: string): Promise<void> {
    this.sent.push(m);
  }
  async alive(): Promise<boolean> {
    return true;
  }
  /** Another instance's committed step. */
  remote(...events: EngineEvent[]): void {
    this.listener.message(JSON.stringify({ o: 'i_other0000000', k: 'ev', n: 0, e: events }));
  }
}

const change = (family: string, revision: number): LeaseChange => ({ type: 'change', family, route: 'lease://a/b/c', change: 'released', revision, fencingToken: revision });

async function setup(fill?: ClusterOptions['fill']) {
  const bus = new ScriptedBus();
  const events = new EventHub();
  const seen: EngineEvent[] = [];
  events.subscribe((e) => seen.push(e));
  const feed = new FeedHub(events, { now: () => 0, epoch: () => 'ep', streamIdPrefix: bus.instanceId });
  const clock = new ManualClock();
  const cluster = new Cluster(bus, events, feed, { gapMs: 50, scheduler: clock, fill });
  const started = cluster.start();
  bus.listener.ready(new Map([['default', 10]]));
  await started;
  const open = (family = 'default') => {
    const sink = new RecordingSink();
    feed.open({ tokenId: 'tk', family, expiresAt: null }, [selectorOrThrow('lease://**')], false, sink, 0);
    return sink;
  };
  return { bus, cluster, feed, seen, open, clock };
}

test('remote and local changes reach streams in revision order; duplicates are dropped; remote ones are marked', async () => {
  const { bus, cluster, seen, open } = await setup();
  const sink = open();
  bus.remote(change('default', 12));
  assert.deepEqual(sink.revisions(), [], '12 waits for 11');
  cluster.committed([change('default', 11)]);
  assert.deepEqual(sink.revisions(), [11, 12]);
  bus.remote(change('default', 12));
  bus.remote(change('default', 13));
  assert.deepEqual(sink.revisions(), [11, 12, 13]);
  assert.equal(sink.ended, undefined);
  const remote = seen.filter((e) => e.type === 'change' && e.remote);
  assert.deepEqual(remote.map((e) => (e as LeaseChange).revision), [12, 13]);
});

test('a revision that never arrives: the family’s streams get overflow (resync), other families keep theirs', async () => {
  const { bus, open, cluster, clock } = await setup();
  const sink = open();
  const other = open('other');
  bus.remote(change('default', 11));
  bus.remote(change('default', 13));
  assert.deepEqual(sink.revisions(), [11]);
  clock.advance(49);
  assert.equal(sink.ended, undefined, 'the gap may still close before gapMs');
  clock.advance(1);
  assert.deepEqual(JSON.parse(sink.ended!.json), { reason: 'resync' });
  assert.equal(sink.ended!.event, 'overflow');
  assert.equal(other.ended, undefined);
  assert.equal(cluster.stats().gaps, 1);
  // Past the gap, the order goes on from 13.
  const again = open();
  bus.remote(change('default', 14));
  assert.deepEqual(again.revisions(), [14]);
});

test('a revision gap the change log holds is filled from it: no resync, every change in order', async () => {
  const asked: Array<[string, number, number]> = [];
  const { bus, open, cluster, clock } = await setup(async (family, after, before) => {
    asked.push([family, after, before]);
    return [change(family, 12)];
  });
  const sink = open();
  bus.remote(change('default', 11));
  bus.remote(change('default', 13));
  bus.remote(change('default', 14));
  clock.advance(50);
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(asked, [['default', 11, 13]]);
  assert.deepEqual(sink.revisions(), [11, 12, 13, 14]);
  assert.equal(sink.ended, undefined);
  assert.deepEqual(cluster.stats(), { gaps: 0, lost: 0, filled: 1 });
  bus.remote(change('default', 15));
  assert.deepEqual(sink.revisions(), [11, 12, 13, 14, 15]);
});

test('a gap the change log cannot fill (pruned, or the store unavailable) resyncs as before', async () => {
  for (const fill of [async () => undefined, async () => Promise.reject(new Error('down')), async () => [change('default', 13)]]) {
    const { bus, open, cluster, clock } = await setup(fill);
    const sink = open();
    bus.remote(change('default', 11));
    bus.remote(change('default', 14));
    clock.advance(50);
    await new Promise((r) => setImmediate(r));
    assert.equal(sink.ended?.event, 'overflow');
    assert.equal(cluster.stats().gaps, 1);
    const again = open();
    bus.remote(change('default', 15));
    assert.deepEqual(again.revisions(), [15]);
  }
});

test('a lost notification channel sends every stream overflow (resync); so does its return', async () => {
  const { bus, open } = await setup();
  const a = open();
  const b = open('other');
  bus.listener.lost();
  assert.equal(a.ended?.event, 'overflow');
  assert.equal(b.ended?.event, 'overflow');
  const c = open();
  bus.listener.ready(new Map([['default', 20]]));
  assert.deepEqual(JSON.parse(c.ended!.json), { reason: 'resync' }, 'opened while the channel was down');
  const d = open();
  bus.remote(change('default', 21));
  assert.deepEqual(d.revisions(), [21]);
});

test('a forwarded call whose refusal arrives before the send returns is answered, never an unhandled rejection', async () => {
  const { bus, cluster } = await setup();
  bus.alive = async () => true;
  bus.send = async (m: string) => {
    const call = JSON.parse(m) as { id: string; o: string };
    // The other instance answers at once, before this send resolves.
    bus.listener.message(JSON.stringify({ o: 'i_other0000000', k: 'reply', id: call.id, to: call.o, err: { code: 'not_found', message: 'no such subscription on this stream' } }));
    await new Promise((r) => setImmediate(r));
  };
  let unhandled = 0;
  const onUnhandled = () => unhandled++;
  process.on('unhandledRejection', onUnhandled);
  try {
    await assert.rejects(cluster.unregister('tk', 'st_i_other0000000xxxxxxxxxxxxxxxx', 'sb_x'), (e: { code?: string }) => e.code === 'not_found');
    // Unhandled rejections are reported once the microtask queue drains: two turns of the loop are past that.
    await new Promise((r) => setImmediate(r));
    await new Promise((r) => setImmediate(r));
    assert.equal(unhandled, 0);
  } finally {
    process.off('unhandledRejection', onUnhandled);
  }
});
