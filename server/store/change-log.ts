/** What both stores share of the change logs' pruning (docs/design.md, "Change log"). */

/** A family whose log holds more than the changes it must keep. */
export interface PruneCandidate {
  family: string;
  revision: number;
  horizon: number;
}

/**
 * Which of a family's oldest logged changes (ascending revision) a prune
 * deletes: the leading run that is both beyond the newest `keepChanges`
 * (revisions are contiguous per family, so that is every revision at or
 * below `revision - keepChanges`) and older than `olderThan`. Returns the
 * last revision to delete, or undefined for none.
 */
export function pruneUpTo(oldest: ReadonlyArray<{ revision: number; time: number }>, cut: number, olderThan: number): number | undefined {
  let last: number | undefined;
  for (const r of oldest) {
    if (r.revision > cut || r.time >= olderThan) break;
    last = r.revision;
  }
  return last;
}
