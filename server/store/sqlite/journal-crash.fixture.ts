/**
 * A child process for server/store/sqlite/journal.test.ts: opens the SQLite
 * store in the data directory given as argv[2], runs argv[3] steps (each
 * inserting a lease and bumping the family's revision) with commits held
 * back, prints `acked N` after each answer, then kills itself (SIGKILL), so
 * the answered steps exist only in the batch journal.
 */

import { SqliteStore } from './sqlite-store';
import { millis } from '../millis';

const [dataDir, count] = [process.argv[2]!, Number(process.argv[3])];
const store = new SqliteStore({ dataDir, commitEveryMs: 3_600_000 });
for (let i = 0; i < count; i++) {
  await store.atomic(async (tx) => {
    const token = await tx.bumpRevision('default');
    await tx.insertLease({
      family: 'default', route: `lease://acme/crash/r${i}`, leaseId: `ls_${i}`, fencingToken: token, sessionHash: 'h1', ownerId: 'o', incarnation: 'hi_1',
      acquiredAt: millis(1), renewedAt: millis(1), expiresAt: millis(10_000), maxExpiresAt: millis(20_000), ttlMs: 5_000, renewalCount: 0, revision: token, metadata: null,
    });
  });
  process.stdout.write(`acked ${i}\n`);
}
process.kill(process.pid, 'SIGKILL');
