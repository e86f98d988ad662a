/**
 * The change log's engine side (docs/design.md, "Change log"): every step
 * appends the changes it made to its family's log in its own transaction,
 * in the form the feed sends them, and a resuming stream reads the log back
 * from its `since` revision (docs/semantics.md §8, "Resuming").
 */

import type { ChangeRow, Tx } from '../../store/types';
import type { EngineEvent, LeaseChange } from '../core/events';
import type { Step } from '../core/step';
import type { LeaseView } from '../core/views';

/** Replays longer than this many events are refused with `resync` (`too_many`); exactly this many replay. */
export const MAX_REPLAY_EVENTS = 10_000;
/** Logged changes read per store step while planning a replay. */
const REPLAY_PAGE = 1_000;

export type ResyncReason = 'horizon' | 'epoch' | 'too_many';

/** Each event's data text, made once: the step logs it and the feed sends the same text. */
const texts = new WeakMap<LeaseChange, string>();

/** The data of a change event as the feed sends it, live or replayed (without the registration it matched). */
export function changeJson(e: LeaseChange): string {
  let text = texts.get(e);
  if (text === undefined) {
    // The former holder's owner and incarnation (kept for the audit) are never sent.
    text =
      e.change === 'acquired'
        ? JSON.stringify({ route: e.route, change: e.change, queued: e.queued === true, revision: e.revision, lease: e.lease })
        : JSON.stringify({ route: e.route, change: e.change, revision: e.revision });
    texts.set(e, text);
  }
  return text;
}

/**
 * A logged change as the engine event it was (for a cluster filling a
 * revision gap from the log). The log keeps what the feed sends, so an
 * ending's fencing token is not in it (0 here: only this instance's own
 * changes, never a remote one, are audited with it).
 */
export function changeFromLog(row: ChangeRow): LeaseChange {
  const d = JSON.parse(row.data) as { route: string; change: LeaseChange['change']; queued?: boolean; lease?: LeaseView };
  const e: LeaseChange = { type: 'change', family: row.family, route: d.route, change: d.change, revision: row.revision, fencingToken: d.lease?.fencing_token ?? 0 };
  if (d.change === 'acquired') Object.assign(e, { queued: d.queued === true, lease: d.lease });
  return e;
}

/**
 * Read the changes of a family with `after < revision < before` from its
 * log, as events, or undefined when the log was pruned past `after` (or
 * more than MAX_REPLAY_EVENTS are asked for: a resync is cheaper then).
 */
export async function readLoggedChanges(tx: Tx, family: string, after: number, before: number): Promise<LeaseChange[] | undefined> {
  if (before - after - 1 > MAX_REPLAY_EVENTS || (await tx.changes.horizon(family)) > after) return undefined;
  return (await tx.changes.read(family, after, before - 1, Math.max(0, before - after - 1))).map(changeFromLog);
}

/** Append the step's changes to their families' logs (inside the step, so they commit with it or not at all). */
export async function logChanges(step: Step): Promise<void> {
  let rows: ChangeRow[] | undefined;
  for (const e of step.events) {
    if (e.type !== 'change') continue;
    (rows ??= []).push({ family: e.family, revision: e.revision, route: e.route, time: step.now, data: changeJson(e) });
  }
  if (rows) await step.tx.changes.append(rows);
}

/** True for the events a change log holds (renewal hints and release requests are never logged nor replayed). */
export const isLogged = (e: EngineEvent): e is LeaseChange => e.type === 'change';

/** What a resuming stream is sent after `hello`. */
export type ReplayPlan<F> =
  /** Every matching change with `since < revision <= upTo`, in revision order; live events continue above `upTo`. */
  | { kind: 'replay'; upTo: number; frames: F[] }
  /** The stream cannot be replayed: the client relists; live events continue above `revision`. */
  | { kind: 'resync'; reason: ResyncReason; revision: number };

/** Runs one read-only store step. */
export type ReadStep = <T>(fn: (tx: Tx) => Promise<T>) => Promise<T>;

/**
 * Plan a stream's replay from `since` (null: not a revision at all). The
 * first step fixes `upTo`, the family's revision, before anything is read;
 * the log is then read by revision in pages, each change turned into the
 * stream's frames by `frames` (none when no registration matches). Bounded:
 * it stops at the first page past `maxEvents` frames. Resync reasons, in
 * order: `since` below the horizon (checked again after the last page, so a
 * prune that raced the reads is seen), not a revision or beyond `upTo`
 * (`epoch`), more than `maxEvents` frames (`too_many`).
 */
export async function planReplay<F>(read: ReadStep, family: string, since: number | null, frames: (row: ChangeRow) => readonly F[], maxEvents = MAX_REPLAY_EVENTS): Promise<ReplayPlan<F>> {
  const first = await read(async (tx) => {
    const upTo = await tx.revision(family);
    const horizon = await tx.changes.horizon(family);
    const ok = since !== null && since >= horizon && since <= upTo;
    return { upTo, horizon, rows: ok ? await tx.changes.read(family, since, upTo, REPLAY_PAGE) : [] };
  });
  const { upTo } = first;
  if (since === null) return { kind: 'resync', reason: 'epoch', revision: upTo };
  if (since < first.horizon) return { kind: 'resync', reason: 'horizon', revision: upTo };
  if (since > upTo) return { kind: 'resync', reason: 'epoch', revision: upTo };
  const out: F[] = [];
  let rows = first.rows;
  let horizon = first.horizon;
  for (;;) {
    for (const row of rows) out.push(...frames(row));
    if (out.length > maxEvents || rows.length < REPLAY_PAGE) break;
    const after = rows[rows.length - 1]!.revision;
    ({ rows, horizon } = await read(async (tx) => ({ rows: await tx.changes.read(family, after, upTo, REPLAY_PAGE), horizon: await tx.changes.horizon(family) })));
  }
  if (since < horizon) return { kind: 'resync', reason: 'horizon', revision: upTo };
  if (out.length > maxEvents) return { kind: 'resync', reason: 'too_many', revision: upTo };
  return { kind: 'replay', upTo, frames: out };
}
