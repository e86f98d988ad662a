import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { matches, parseSelector, routeSegments, selectorOrThrow, type Triple } from '@/lib/selector';
import { EventHub, type LeaseChange } from '../core/events';
import { FeedHub, type FeedFrame, type FeedSink, type StreamOwner } from './feed';
import { SubscriptionIndex } from './subscription-index';
import { LeaseholdError } from '../core/errors';
import { prng } from '../../testing/harness';

/** A sink that records frames; `capacity` frames are accepted before it reports its bound passed. */
class RecordingSink implements FeedSink {
  frames: FeedFrame[] = [];
  ended: FeedFrame | undefined;
  private listeners: Array<() => void> = [];
  constructor(private capacity = Infinity) {}
  push(f: FeedFrame): boolean {
    this.frames.push(f);
    return this.frames.length <= this.capacity;
  }
  heartbeat(): void {}
  end(last: FeedFrame): number {
    this.ended = last;
    const queued = this.frames.filter((f) => f.subscriptionId !== undefined).length;
    for (const l of this.listeners.splice(0)) l();
    return queued;
  }
  onClose(l: () => void): void {
    this.listeners.push(l);
  }
  /** The client went away. */
  disconnect(): void {
    for (const l of this.listeners.splice(0)) l();
  }
  changes(): Array<{ sub: string; route: string; change: string }> {
    return this.frames.filter((f) => f.event === 'change').map((f) => ({ sub: f.subscriptionId!, ...(JSON.parse(f.json) as { route: string; change: string }) }));
  }
}

/** The final frame's data (read through a call, so the compiler does not keep an earlier narrowing). */
const endedWith = (sink: RecordingSink): string | undefined => sink.ended?.json;

function hub(limits = {}) {
  const events = new EventHub();
  const h = new FeedHub(events, { now: () => 0, epoch: () => 'ep_test', limits });
  let revision = 0;
  const change = (family: string, route: string, kind: LeaseChange['change'] = 'released'): void =>
    events.publish({ type: 'change', family, route, change: kind, revision: ++revision, fencingToken: revision, ownerId: 'secret-owner', incarnation: 'hi_secret' });
  return { h, events, change };
}

const owner = (tokenId = 'tk_a', family = 'default'): StreamOwner => ({ tokenId, family, expiresAt: null });
const sel = (s: string) => selectorOrThrow(s);

const SEGMENTS = ['a', 'b', 'c'];
function randomSelector(rand: () => number): string {
  const part = () => (rand() < 0.4 ? '*' : SEGMENTS[Math.floor(rand() * SEGMENTS.length)]!);
  if (rand() < 0.2) {
    const lit = SEGMENTS[Math.floor(rand() * SEGMENTS.length)]!;
    return rand() < 0.5 ? `lease://**/${lit}` : `lease://${lit}/**`;
  }
  return `lease://${part()}/${part()}/${part()}`;
}

describe('SubscriptionIndex', () => {
  test('matches exactly the registrations a brute-force scan matches (randomized, seed 7), and prunes on removal', () => {
    const rand = prng(7);
    const index = new SubscriptionIndex<number>();
    const regs: Array<{ id: number; family: string; triple: Triple }> = [];
    for (let id = 0; id < 400; id++) {
      const p = parseSelector(randomSelector(rand));
      assert.ok(p.ok);
      const family = rand() < 0.5 ? 'f1' : 'f2';
      regs.push({ id, family, triple: p.value.triple });
      index.add(family, p.value.triple, id);
    }
    assert.equal(index.size, 400);
    const check = () => {
      for (const a of SEGMENTS)
        for (const b of SEGMENTS)
          for (const c of SEGMENTS)
            for (const family of ['f1', 'f2', 'f3']) {
              const segs = [a, b, c] as const;
              const got: number[] = [];
              index.match(family, segs, (id) => got.push(id));
              const want = regs.filter((r) => r.family === family && matches(r.triple, segs)).map((r) => r.id);
              assert.deepEqual(got.sort((x, y) => x - y), want.sort((x, y) => x - y), `${family} ${segs.join('/')}`);
            }
    };
    check();
    // Remove a random half, then all: matching stays exact and the trie empties.
    for (const r of regs.splice(0, 200)) assert.ok(index.remove(r.family, r.triple, r.id));
    check();
    assert.equal(index.remove('f1', [null, null, null], 9_999), false);
    for (const r of regs.splice(0)) assert.ok(index.remove(r.family, r.triple, r.id));
    assert.equal(index.size, 0);
    assert.equal((index as unknown as { families: Map<string, unknown> }).families.size, 0, 'empty branches are pruned');
  });
});

describe('FeedHub', () => {
  test('a change reaches matching registrations of its family only, once each, without the former holder', () => {
    const { h, change } = hub();
    const a = new RecordingSink();
    const b = new RecordingSink();
    const opened = h.open(owner(), [sel('lease://x/**'), sel('lease://x/y/z'), sel('lease://q/*/*')], false, a, 0);
    h.open(owner('tk_b', 'other'), [sel('lease://x/**')], false, b, 0);
    change('default', 'lease://x/y/z');
    const got = a.changes();
    assert.deepEqual(got.map((c) => c.sub).sort(), opened.subscriptions.slice(0, 2).map((s) => s.subscription_id).sort());
    assert.equal(b.changes().length, 0);
    assert.ok(a.frames.every((f) => !f.json.includes('secret')), 'owner and incarnation of an ending change are never sent');
  });

  test('caps: 4,096 exact and 128 wildcard per stream (duplicates first), 16 with renewal hints', () => {
    const { h } = hub();
    const sink = new RecordingSink();
    const { streamId } = h.open(owner(), [], false, sink, 0);
    for (let i = 0; i < 4_096; i++) h.register('tk_a', streamId, sel(`lease://e/e/r${i}`), false);
    assert.throws(() => h.register('tk_a', streamId, sel('lease://e/e/r4096'), false), (e: unknown) => e instanceof LeaseholdError && e.code === 'rate_limited');
    assert.equal(h.register('tk_a', streamId, sel('lease://e/e/r7'), false).created, false);
    for (let i = 0; i < 128; i++) h.register('tk_a', streamId, sel(`lease://w/w${i}/*`), i < 16);
    assert.throws(() => h.register('tk_a', streamId, sel('lease://w/w128/*'), false), (e: unknown) => e instanceof LeaseholdError && e.code === 'rate_limited');
    assert.throws(() => h.register('tk_a', streamId, sel('lease://e/e/r1'), true), (e: unknown) => e instanceof LeaseholdError && e.code === 'rate_limited');
    assert.deepEqual([h.stats().exact, h.stats().wildcard, h.stats().renewals], [4_096, 128, 16]);
    // Another token cannot touch the stream.
    assert.throws(() => h.register('tk_b', streamId, sel('lease://e/e/x'), false), (e: unknown) => e instanceof LeaseholdError && e.code === 'not_found');
    sink.disconnect();
    assert.deepEqual([h.stats().streams, h.stats().exact, h.stats().wildcard, h.stats().renewals], [0, 0, 0, 0]);
  });

  test('a stream past its bound gets one overflow (slow_consumer), is freed, and the others keep receiving', () => {
    const { h, change } = hub();
    const slow = new RecordingSink(5);
    const fast = new RecordingSink();
    h.open(owner(), [sel('lease://o/**')], false, slow, 0);
    h.open(owner(), [sel('lease://o/**')], false, fast, 0);
    for (let i = 0; i < 20; i++) change('default', `lease://o/a/r${i}`);
    assert.deepEqual(slow.ended && JSON.parse(slow.ended.json), { reason: 'slow_consumer' });
    assert.equal(slow.ended?.event, 'overflow');
    assert.equal(fast.changes().length, 20);
    assert.equal(fast.ended, undefined);
    const st = h.stats();
    assert.deepEqual([st.streams, st.overflows, st.dropped, st.notifications], [1, 1, 4, 24]);
  });

  test('resync ends every stream of the family with overflow (resync); other families stay', () => {
    const { h } = hub();
    const a = new RecordingSink();
    const b = new RecordingSink();
    h.open(owner('tk_a', 'fa'), [], false, a, 0);
    h.open(owner('tk_b', 'fb'), [], false, b, 0);
    h.resync('fa');
    assert.equal(a.ended?.json, JSON.stringify({ reason: 'resync' }));
    assert.equal(b.ended, undefined);
  });

  test('hello carries the later of the store revision and the last published one', () => {
    const { h, change } = hub();
    change('default', 'lease://h/a/b');
    change('default', 'lease://h/a/b');
    const sink = new RecordingSink();
    h.open(owner(), [], false, sink, 1);
    assert.equal(JSON.parse(sink.frames[0]!.json).revision, 2);
    const other = new RecordingSink();
    h.open(owner('tk_c', 'fresh'), [], false, other, 9);
    assert.equal(JSON.parse(other.frames[0]!.json).revision, 9);
  });

  test('the owner check at a heartbeat ends streams whose credential ended elsewhere', async () => {
    const events = new EventHub();
    const h = new FeedHub(events, {
      now: () => 0,
      epoch: () => 'ep',
      checkOwners: async (owners) => new Map([...owners].filter(([, o]) => o.tokenId === 'tk_gone').map(([id]) => [id, 'token_revoked' as const])),
    });
    const gone = new RecordingSink();
    const live = new RecordingSink();
    h.open(owner('tk_gone'), [], false, gone, 0);
    h.open(owner('tk_live'), [], false, live, 0);
    h.tick();
    await new Promise((r) => setImmediate(r));
    assert.equal(gone.ended?.json, JSON.stringify({ reason: 'token_revoked' }));
    assert.equal(live.ended, undefined);
    h.dispose();
    assert.equal(endedWith(live), JSON.stringify({ reason: 'shutdown' }));
  });

  test('routeSegments and the trie agree on every route shape the grammar allows', () => {
    const { h, change } = hub();
    const sink = new RecordingSink();
    const route = 'lease://r-1.x/a~b:c@d/e_f';
    h.open(owner(), [sel('lease://**/e_f')], false, sink, 0);
    assert.deepEqual(routeSegments(route), ['r-1.x', 'a~b:c@d', 'e_f']);
    change('default', route);
    assert.equal(sink.changes().length, 1);
  });
});
