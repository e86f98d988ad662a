/**
 * A resuming stream's replay (docs/design.md "Resuming"): the frames a
 * logged change makes for the stream's registrations, and the order in
 * which a resumed stream is sent its hello, answers, plan and held frames.
 */

import { routeSegments } from '@/lib/selector';
import type { ChangeRow } from '../../store/types';
import type { ReplayPlan, ResyncReason } from './change-log';
import { frame, type FeedFrame, type FeedStats, type Registration, type Stream } from './feed-types';
import { SubscriptionIndex } from './subscription-index';

/**
 * The frames one logged change makes for the stream: one per registration
 * it matches, as live. Matched through an index of the stream's own
 * registrations, built on first use (they cannot change while it resumes:
 * its id is not known before `hello`). No frames for a stream that ended.
 */
export function replayFramesOf(s: Stream | undefined): (row: ChangeRow) => FeedFrame[] {
  if (!s) return () => [];
  const index = new SubscriptionIndex<Registration>();
  for (const reg of s.byId.values()) index.add(s.owner.family, reg.selector.triple, reg);
  return (row) => {
    const out: FeedFrame[] = [];
    index.match(s.owner.family, routeSegments(row.route), (reg) => out.push({ event: 'change', id: row.revision, subscriptionId: reg.id, json: row.data }));
    return out;
  };
}

/** What resuming a stream needs of its hub. */
export interface ResumeHub {
  hello: { epoch: string; heartbeat_ms: number };
  counts: Pick<FeedStats, 'resumes' | 'replayed'>;
  resyncCounts: Record<ResyncReason, number>;
  /** Push straight to the sink; false if the stream ended. */
  send: (f: FeedFrame) => boolean;
  /** Send what was held back, but the changes the plan covered, and go live. */
  release: (upTo: number) => void;
}

/**
 * Send a resuming stream (open, holding `held`) its `hello` (`resumed: true` iff a
 * replay follows), its `subscribed` events, then the plan: `resync` or the
 * replayed changes, fed as the client reads them; then the frames held
 * back meanwhile, without the changes the plan already covered (revision
 * at or below its `upTo`): no gap, no duplicate.
 */
export function resumeStream(s: Stream, held: FeedFrame[], plan: ReplayPlan<FeedFrame>, hub: ResumeHub): void {
  const upTo = plan.kind === 'replay' ? plan.upTo : plan.revision;
  let i = 0;
  s.floor = upTo;
  s.sink.push(frame('hello', { stream_id: s.id, epoch: hub.hello.epoch, revision: upTo, heartbeat_ms: hub.hello.heartbeat_ms, resumed: plan.kind === 'replay' }));
  // `open` queued the registrations' answers first, before any live event could arrive.
  for (; i < held.length && held[i]!.event === 'subscribed'; i++) hub.send(held[i]!);
  // Held frames stay held (and later ones join them) until the replay is sent.
  s.held = held.slice(i);
  s.heldAnswers = 0;
  if (plan.kind === 'resync') {
    hub.resyncCounts[plan.reason]++;
    hub.send(frame('resync', { reason: plan.reason, revision: plan.revision }));
    hub.release(upTo);
    return;
  }
  hub.counts.resumes++;
  let next = 0;
  const pump = (): void => {
    if (!s.open) return;
    while (next < plan.frames.length && (s.sink.room?.() ?? Infinity) > 0) {
      hub.counts.replayed++;
      if (!hub.send(plan.frames[next++]!)) return;
    }
    if (next < plan.frames.length) s.sink.whenRoom!(pump);
    else hub.release(upTo);
  };
  pump();
}
