/**
 * The resume seam in the FeedHub (docs/design.md, "Resuming"), without a
 * store: what a resuming stream holds back while its replay is planned, and
 * what it is sent when the plan arrives, in order, with live events that
 * arrived on either side of the plan's revision. The store side (the log and
 * the plan) is tested on both stores in server/store/change-log.conformance.test.ts
 * and through real servers in server/http/feed-resume.test.ts.
 */

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { selectorOrThrow } from '@/lib/selector';
import { EventHub, type LeaseChange } from '../core/events';
import { FeedHub, type FeedFrame, type FeedSink, type StreamOwner } from './feed';
import { changeFromLog, changeJson, planReplay, type ReadStep } from './change-log';
import type { ChangeRow, Tx } from '../../store/types';
import { millis } from '../../store/millis';

/** A sink with a room for replays of `room` frames at a time, refilled by `drain()`. */
class Sink implements FeedSink {
  frames: FeedFrame[] = [];
  ended: FeedFrame | undefined;
  private closers: Array<() => void> = [];
  private roomers: Array<() => void> = [];
  private taken = 0;
  constructor(
    private readonly roomSize = Infinity,
    private readonly capacity = Infinity,
  ) {}
  push(f: FeedFrame): boolean {
    this.frames.push(f);
    this.taken++;
    return this.taken <= this.capacity;
  }
  heartbeat(): void {}
  end(last: FeedFrame): number {
    this.ended = last;
    for (const l of this.closers.splice(0)) l();
    return 0;
  }
  onClose(l: () => void): void {
    this.closers.push(l);
  }
  room(): number {
    return this.roomSize - this.taken;
  }
  whenRoom(l: () => void): void {
    this.roomers.push(l);
  }
  /** The client read everything queued. */
  drain(): void {
    this.taken = 0;
    for (const l of this.roomers.splice(0)) l();
  }
  /** Event names, with the revision of changes and renewals' route. */
  trace(): string[] {
    return this.frames.map((f) => (f.event === 'change' ? `change ${f.id}` : f.event === 'renewed' ? `renewed ${JSON.parse(f.json).route}` : f.event));
  }
}

const owner: StreamOwner = { tokenId: 'tk_a', family: 'default', expiresAt: null };

function setup(limits = {}) {
  const events = new EventHub();
  const hub = new FeedHub(events, { now: () => 0, epoch: () => 'ep_test', limits });
  const change = (revision: number, route = 'lease://a/b/c', family = 'default'): LeaseChange => {
    const e: LeaseChange = { type: 'change', family, route, change: 'released', revision, fencingToken: 1 };
    events.publish(e);
    return e;
  };
  const renewed = (route = 'lease://a/b/c') => events.publish({ type: 'renewed', family: 'default', route, expiresAt: 0, renewalCount: 1 });
  const row = (revision: number, route = 'lease://a/b/c'): ChangeRow => ({
    family: 'default',
    revision,
    route,
    time: millis(0),
    data: changeJson({ type: 'change', family: 'default', route, change: 'released', revision, fencingToken: 1 }),
  });
  return { events, hub, change, renewed, row };
}

describe('FeedHub: resuming a stream', () => {
  test('nothing is sent before the plan; then hello, subscribed, the replay, and the held live events above its revision', () => {
    const { hub, change, renewed, row } = setup();
    const sink = new Sink();
    const { streamId } = hub.open(owner, [selectorOrThrow('lease://a/**')], true, sink, 0, true);
    // Live events arrive while the log is read: 11 and 12 committed before the plan's read (so the log has them), 13 after.
    change(11);
    renewed();
    change(12);
    change(13);
    assert.equal(sink.frames.length, 0);
    const frames = hub.replayFrames(streamId);
    hub.resume(streamId, { kind: 'replay', upTo: 12, frames: [row(11), row(12), row(99, 'lease://x/y/z')].flatMap(frames) });
    change(14);
    // A change the replay covered, published late (another instance's notification), is not sent again.
    change(12);
    change(15);
    assert.deepEqual(sink.trace(), ['hello', 'subscribed', 'change 11', 'change 12', 'renewed lease://a/b/c', 'change 13', 'change 14', 'change 15']);
    const hello = JSON.parse(sink.frames[0]!.json);
    assert.deepEqual([hello.revision, hello.resumed], [12, true]);
    // The replayed frames carry the stream's own registration, like live ones.
    const sub = JSON.parse(sink.frames[1]!.json).subscription_id;
    assert.ok(sink.frames.filter((f) => f.event === 'change').every((f) => f.subscriptionId === sub));
    assert.deepEqual(hub.stats().resumes, 1);
    assert.deepEqual(hub.stats().replayed, 2);
  });

  test('resync: hello resumed false, subscribed, resync, then the held live events above its revision', () => {
    const { hub, change } = setup();
    const sink = new Sink();
    const { streamId } = hub.open(owner, [selectorOrThrow('lease://a/**')], false, sink, 0, true);
    change(5);
    change(6);
    hub.resume(streamId, { kind: 'resync', reason: 'horizon', revision: 5 });
    assert.deepEqual(sink.trace(), ['hello', 'subscribed', 'resync', 'change 6']);
    assert.deepEqual(JSON.parse(sink.frames[2]!.json), { reason: 'horizon', revision: 5 });
    assert.equal(JSON.parse(sink.frames[0]!.json).resumed, false);
    assert.deepEqual(hub.stats().resyncs, { horizon: 1, epoch: 0, too_many: 0 });
  });

  test('a long replay is fed as the client reads; live events meanwhile wait behind it, in order', () => {
    const { hub, change, row } = setup();
    const sink = new Sink(4);
    const { streamId } = hub.open(owner, [selectorOrThrow('lease://a/**')], false, sink, 0, true);
    const frames = hub.replayFrames(streamId);
    hub.resume(streamId, { kind: 'replay', upTo: 10, frames: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].map((r) => row(r)).flatMap(frames) });
    // hello and subscribed took 2 of the 4: two replayed so far.
    assert.deepEqual(sink.trace(), ['hello', 'subscribed', 'change 1', 'change 2']);
    change(11);
    sink.drain();
    sink.drain();
    change(12);
    sink.drain();
    assert.deepEqual(sink.trace().slice(2), [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12].map((r) => `change ${r}`));
  });

  test('a resuming stream that holds back more live events than its bound ends with overflow (its registrations’ answers do not count)', () => {
    const { hub, change } = setup({ resumeBuffer: 3 });
    const sink = new Sink();
    const { streamId } = hub.open(owner, ['lease://x/**', 'lease://y/**', 'lease://z/**', 'lease://q/**'].map(selectorOrThrow), false, sink, 0, true);
    for (let r = 1; r <= 3; r++) change(r, 'lease://x/b/c');
    assert.equal(sink.ended, undefined);
    change(4, 'lease://x/b/c');
    assert.deepEqual(JSON.parse(sink.ended!.json), { reason: 'slow_consumer' });
    assert.equal(hub.has(streamId), false);
    // A plan that arrives for an ended stream sends nothing.
    hub.resume(streamId, { kind: 'resync', reason: 'epoch', revision: 4 });
    assert.equal(sink.frames.length, 0);
  });

  test('a replay the client does not read counts against its queue: overflow, as live', () => {
    const { hub, row } = setup();
    const sink = new Sink(Infinity, 5);
    const { streamId } = hub.open(owner, [selectorOrThrow('lease://a/**')], false, sink, 0, true);
    const frames = hub.replayFrames(streamId);
    hub.resume(streamId, { kind: 'replay', upTo: 10, frames: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].map((r) => row(r)).flatMap(frames) });
    assert.deepEqual(JSON.parse(sink.ended!.json), { reason: 'slow_consumer' });
    assert.equal(hub.has(streamId), false);
  });

  test('discard forgets a resuming stream without sending anything', () => {
    const { hub } = setup();
    const sink = new Sink();
    const { streamId } = hub.open(owner, [selectorOrThrow('lease://a/**')], false, sink, 0, true);
    hub.discard(streamId);
    assert.equal(hub.has(streamId), false);
    assert.equal(hub.stats().streams, 0);
    assert.equal(sink.frames.length, 0);
  });
});

describe('planReplay', () => {
  /** A log of revisions 1..n with the given horizon, read as the stores read it. */
  function log(n: number, horizon: number, route = () => 'lease://a/b/c'): { read: ReadStep; reads: () => number } {
    let reads = 0;
    const rows: ChangeRow[] = Array.from({ length: n - horizon }, (_, i) => {
      const revision = horizon + 1 + i;
      return { family: 'f', revision, route: route(), time: millis(0), data: '{}' };
    });
    const tx = {
      revision: async () => n,
      changes: {
        horizon: async () => horizon,
        read: async (_f: string, after: number, upTo: number, limit: number) => rows.filter((r) => r.revision > after && r.revision <= upTo).slice(0, limit),
      },
    } as unknown as Tx;
    return { read: (fn) => (reads++, fn(tx)), reads: () => reads };
  }
  const one = (r: ChangeRow) => [r.revision];

  test('replays every change after since, up to the revision read first, in pages', async () => {
    const l = log(2_500, 0);
    const plan = await planReplay(l.read, 'f', 100, one, 10_000);
    assert.equal(plan.kind, 'replay');
    assert.deepEqual(plan.kind === 'replay' && [plan.upTo, plan.frames.length, plan.frames[0], plan.frames.at(-1)], [2_500, 2_400, 101, 2_500]);
    assert.equal(l.reads(), 3);
  });

  test('reasons: horizon wins; epoch beyond the revision or not a revision; too_many past the bound, exactly the bound replays', async () => {
    assert.deepEqual(await planReplay(log(10, 5).read, 'f', 4, one), { kind: 'resync', reason: 'horizon', revision: 10 });
    assert.equal((await planReplay(log(10, 5).read, 'f', 5, one)).kind, 'replay');
    assert.deepEqual(await planReplay(log(10, 0).read, 'f', 11, one), { kind: 'resync', reason: 'epoch', revision: 10 });
    assert.deepEqual(await planReplay(log(10, 0).read, 'f', null, one), { kind: 'resync', reason: 'epoch', revision: 10 });
    assert.deepEqual(await planReplay(log(10, 0).read, 'f', 10, one), { kind: 'replay', upTo: 10, frames: [] });
    assert.equal((await planReplay(log(10, 0).read, 'f', 0, one, 10)).kind, 'replay');
    assert.deepEqual(await planReplay(log(10, 0).read, 'f', 0, one, 9), { kind: 'resync', reason: 'too_many', revision: 10 });
    // Frames are counted, not changes: two registrations matching each change double them.
    assert.deepEqual(await planReplay(log(10, 0).read, 'f', 0, (r) => [r.revision, r.revision], 19), { kind: 'resync', reason: 'too_many', revision: 10 });
  });

  test('a bounded read: too_many stops at the first page past the bound', async () => {
    const l = log(50_000, 0);
    assert.equal((await planReplay(l.read, 'f', 0, one, 10_000)).kind, 'resync');
    assert.equal(l.reads(), 11);
  });
});

describe('changeFromLog', () => {
  test('a logged change reads back as the event it was, which serializes to the same data', () => {
    const lease = { route: 'lease://a/b/c', fencing_token: 7, revision: 7, owner_id: 'w', metadata: { k: [1, 'x'] } } as unknown as NonNullable<LeaseChange['lease']>;
    const acquired: LeaseChange = { type: 'change', family: 'f', route: 'lease://a/b/c', change: 'acquired', revision: 7, fencingToken: 7, queued: true, lease };
    const released: LeaseChange = { type: 'change', family: 'f', route: 'lease://a/b/c', change: 'released', revision: 8, fencingToken: 7 };
    for (const e of [acquired, released]) {
      const row: ChangeRow = { family: e.family, revision: e.revision, route: e.route, time: millis(0), data: changeJson(e) };
      const back = changeFromLog(row);
      assert.equal(changeJson(back), row.data);
      assert.deepEqual([back.family, back.route, back.change, back.revision], [e.family, e.route, e.change, e.revision]);
    }
    assert.equal(changeFromLog({ family: 'f', revision: 7, route: 'lease://a/b/c', time: millis(0), data: changeJson(acquired) }).fencingToken, 7);
  });
});
