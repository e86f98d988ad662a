/**
 * `leasehold run R --wait D` for any duration (CONTRACT §20, CLI.md): the
 * wait goes on across requests with the server's queue ticket, keeping its
 * place. The server here waits 200 ms a request at most (`maxWaitMs`,
 * LEASEHOLD_MAX_WAIT_MS), so a `--wait 2m` re-issues many times while a
 * later waiter queues behind it; when the holder lets go, `run` gets the
 * route, not the later waiter.
 */

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { LeaseholdClient } from '@/lib/client';
import { call, leasePath, rid, startTestServer, type TestServer } from '../../server/testing/harness';
import { waitFor } from '../../server/testing/wait';
import { CliHarness } from './support';

let s: TestServer;
let cli: CliHarness;
before(async () => {
  s = await startTestServer({ engine: { limits: { maxWaitMs: 200 } } });
  cli = new CliHarness(s);
});
after(async () => {
  cli.close();
  await s.close();
});

/** Acquires answered `lease_conflict` on every instance (each wait that ended without a grant), less `others` of them. */
async function timedOut(others = 0): Promise<number> {
  let n = 0;
  for (const url of s.urls) {
    const r = await call(url, 'GET', '/api/metrics', undefined, { token: s.token });
    n += Number(/^leasehold_acquire_total\{result="conflict"\} (\d+)/m.exec(r.text)?.[1] ?? 0);
  }
  return n - others;
}

test('run --wait beyond the server\'s wait keeps its place across requests: it gets the route before a later waiter', async () => {
  const route = 'lease://run/wait/long';
  const holder = await s.openSession('holder');
  const held = await s.call('POST', leasePath(route, 'acquire'), { session_id: holder.sessionId, request_id: rid() });
  assert.equal(held.status, 200, held.text);
  const run = cli.start(['run', route, '--wait', '2m', '--owner', 'cron-wait', '--', process.execPath, '-e', "console.log('started')"]);
  // The later waiter waits through the SDK, re-issuing as run does; its own conflicts are counted here.
  let laterConflicts = 0;
  const counting: typeof fetch = async (input, init) => {
    const res = await s.fetch(input, init);
    if (res.status === 409) laterConflicts++;
    return res;
  };
  const later = await new LeaseholdClient({ baseUrl: s.url, token: s.token, fetch: counting }).openSession({ ownerId: 'later' });
  try {
    await waitFor('run to re-issue its wait', () => timedOut(), (n) => n >= 1);
    const laterP = later.acquire(route, { waitMs: 90_000 });
    laterP.catch(() => undefined);
    const mark = await timedOut(laterConflicts);
    await waitFor('run to re-issue twice more', () => timedOut(laterConflicts), (n) => n >= mark + 2);
    const rel = await s.call('POST', leasePath(route, 'release'), { session_id: holder.sessionId, request_id: rid(), lease_id: held.body.lease.lease_id, fencing_token: held.body.lease.fencing_token });
    assert.equal(rel.status, 200, rel.text);
    assert.equal(await run.exited, 0, run.stderr);
    assert.match(run.stdout, /started/);
    // run released on exit: the later waiter is granted only now.
    const l = await laterP;
    assert.ok(l.fencingToken > held.body.lease.fencing_token + 1, 'run held the route in between');
    await l.release();
  } finally {
    run.child.kill('SIGKILL');
    await later.close();
  }
});
