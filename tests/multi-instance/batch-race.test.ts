/**
 * Two instances batching the steps of one family (docs/design.md
 * "PostgreSQL: row locks, one batch per family"), under a race on purpose: 48 clients
 * spread over both instances acquire (some waiting in the shared queue)
 * and release four routes as fast as they can. Observed from the answers:
 * a route never has two holders at once (a holder marks its route while
 * it holds it, and clears the mark before it sends the release), and each
 * route's fencing tokens strictly increase in the order its holders got it.
 */

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { startInstances, type Instances } from '../../server/testing/instances';

let I: Instances;

before(async () => {
  I = await startInstances(2);
});
after(async () => {
  await I.close();
});

test('two instances batching one family: no double grant, tokens strictly increase per route', async () => {
  const routes = Array.from({ length: 4 }, (_, k) => `lease://race/batch/r${k}`);
  const holder = new Map<string, number>();
  const grants = new Map<string, number[]>(routes.map((r) => [r, []]));
  const violations: string[] = [];
  let queued = 0;
  let conflicts = 0;
  const workers = 48;
  const sessions = await Promise.all(Array.from({ length: workers }, (_, w) => I.openSession(I.list[w % 2]!, `racer-${w}`, 30_000)));
  await Promise.all(
    sessions.map(async (sessionId, w) => {
      for (let n = 0; n < 12; n++) {
        const on = I.list[(w + n) % 2]!;
        const route = routes[(w + n) % routes.length]!;
        // Every third attempt waits in the shared queue (granted by whichever instance frees the route).
        const a = await I.acquire(on, route, sessionId, n % 3 === 0 ? { wait_ms: 2_000 } : {});
        if (a.status !== 200) {
          assert.equal(a.status, 409, a.text);
          conflicts++;
          continue;
        }
        const token = a.body.lease.fencing_token as number;
        if (holder.has(route)) violations.push(`${route}: granted to ${w} (token ${token}) while ${holder.get(route)} holds it`);
        holder.set(route, w);
        grants.get(route)!.push(token);
        if (a.body.queued === true) queued++;
        // Hold it a moment: a second grant answered meanwhile finds the mark.
        await sleep(2);
        holder.delete(route);
        const r = await I.release(I.list[(w + n + 1) % 2]!, route, sessionId, a.body.lease);
        assert.equal(r.status, 200, r.text);
      }
    }),
  );
  assert.deepEqual(violations, []);
  let total = 0;
  for (const [route, tokens] of grants) {
    for (let i = 1; i < tokens.length; i++) assert.ok(tokens[i]! > tokens[i - 1]!, `${route}: token ${tokens[i]} after ${tokens[i - 1]}`);
    total += tokens.length;
  }
  assert.equal(total + conflicts, workers * 12);
  assert.ok(total >= 48, `only ${total} grants`);
  assert.ok(queued > 0, 'some grants came from the shared queue');
});
