import type { Session } from 'leasehold/client';

/**
 * A worker that lets go when asked (docs/release-requests.md): it finishes
 * the item in hand, checkpoints, and releases, so the next holder resumes
 * from the checkpoint instead of being forced out mid-item.
 */
export async function processQueue(
  session: Session,
  route: string,
  items: readonly string[],
  work: (item: string, fencingToken: number) => Promise<void>,
): Promise<{ done: number; stoppedBecause: 'finished' | 'release requested' }> {
  await using held = await session.acquire(route, { ttlMs: 3_000 });
  held.addEventListener('releaseRequested', (e) => console.log(`asked to release ${route}: ${e.request.reason}`));
  const start = ((await held.readCheckpoint())?.value as { next: number } | undefined)?.next ?? 0;
  for (let i = start; i < items.length; i++) {
    held.signal.throwIfAborted();                  // lost: stop at once, write nothing more
    await work(items[i]!, held.fencingToken);      // the current item always finishes
    await held.checkpoint({ next: i + 1 });        // fenced: the next holder resumes here
    if (held.releaseRequested.aborted) {
      await held.release();                        // let go cleanly, between items
      return { done: i + 1 - start, stoppedBecause: 'release requested' };
    }
  }
  return { done: items.length - start, stoppedBecause: 'finished' };
}
