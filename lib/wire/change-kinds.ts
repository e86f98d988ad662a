/**
 * The change kinds of the held set (docs/semantics.md §8), listed once: the
 * engine, the feed's schema, the SDK's view, the metrics and the console
 * all read them from here (lib/wire/single-source.test.ts fails on a second list).
 */

export const CHANGE_KINDS = ['acquired', 'released', 'expired', 'session_closed', 'force_released', 'revoked', 'rolled_back'] as const;

export type ChangeKind = (typeof CHANGE_KINDS)[number];

/** The kinds that take a lease out of the held set: every kind but `acquired`. */
export type EndingKind = Exclude<ChangeKind, 'acquired'>;

export const ENDING_KINDS: readonly EndingKind[] = CHANGE_KINDS.filter((k): k is EndingKind => k !== 'acquired');

/** True for a kind that takes a lease out of the held set. */
export function isEnding(kind: ChangeKind): kind is EndingKind {
  return kind !== 'acquired';
}
