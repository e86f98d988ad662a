/**
 * The one resume policy of the SDK's live views (the observer and the
 * console's shared feed; docs/sdk.md "After a disconnect or a restart"):
 * after any disconnect, heartbeat loss or server restart, open the new stream
 * with the same selectors and `since` = the last revision applied, and trust
 * the replay; list again only when the server says `resync`, the last stream
 * ended in `overflow`, the store's epoch changed, or the server did not
 * resume (docs/semantics.md §8, "Resuming").
 */

import type { HelloEvent, ResyncEvent } from './subscription';

export type RelistReason = 'resync' | 'overflow' | 'epoch' | 'not_resumed' | 'disabled';

/**
 * How a live view came back after its stream ended or the server asked it to
 * start over: `resumed` (the server replayed what it missed; no listing) or
 * `relisted` (it listed again), with why: `resync` (the server could not
 * replay; `detail` has its reason: `horizon`, `epoch` or `too_many`),
 * `overflow` (the stream was dropped for falling behind, or the server lost
 * track), `epoch` (the store is another one), `not_resumed` (the server did
 * not resume the stream), or `disabled` (resuming is off).
 */
export interface Recovery {
  readonly kind: 'resumed' | 'relisted';
  readonly reason?: RelistReason;
  readonly detail?: string;
  /** The revision the new stream resumed from (`since`), when it asked to. */
  readonly since?: number;
}

/**
 * The verdict on a stream opened with `since`, from its `hello` and the
 * `resync` that came with it, if any: the server's word wins, then a new
 * epoch, then a server that did not resume.
 */
export function judgeResume(since: number, epoch: string | undefined, hello: HelloEvent, resync: ResyncEvent | undefined): Recovery {
  if (resync) return { kind: 'relisted', reason: 'resync', detail: resync.reason, since };
  if (hello.epoch !== epoch) return { kind: 'relisted', reason: 'epoch', since };
  if (!hello.resumed) return { kind: 'relisted', reason: 'not_resumed', since };
  return { kind: 'resumed', since };
}

/**
 * Where a live view stands: the revision up to which it holds every change
 * of its selectors, and the store lifetime (epoch) that revision belongs to.
 * A fresh stream's `hello.revision` is a safe start once its selectors are
 * registered and listed; a resumed stream's is not (its replay may not have
 * arrived yet), so only the changes applied move it on.
 */
export class ResumePoint {
  revision: number | undefined;
  epoch: string | undefined;
  /** Why the next stream must list instead of resuming. */
  mustRelist: RelistReason | undefined;

  /** The `since` of the next stream, or undefined when it must list (and `reason` says why). */
  next(enabled: boolean): { since: number } | { since: undefined; reason: RelistReason | undefined } {
    if (!enabled) return { since: undefined, reason: this.revision === undefined ? undefined : 'disabled' };
    if (this.revision === undefined) return { since: undefined, reason: undefined };
    if (this.mustRelist !== undefined) return { since: undefined, reason: this.mustRelist };
    return { since: this.revision };
  }

  /** A listing at `revision` (or later) of the store `epoch` replaced the view. */
  listed(revision: number, epoch: string): void {
    this.revision = revision;
    this.epoch = epoch;
    this.mustRelist = undefined;
  }

  /** A change with this revision was applied. */
  applied(revision: number): void {
    this.revision = Math.max(this.revision ?? 0, revision);
  }
}
