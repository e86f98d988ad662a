/**
 * `leasehold run --all ROUTE ROUTE… -- <command>` against a real server:
 * every route or none, the child's LEASEHOLD_ROUTES /
 * LEASEHOLD_FENCING_TOKENS / LEASEHOLD_LEASE_IDS, renewals while it runs,
 * release on exit, a held route refused (exit 3, nothing acquired, the
 * command never started), and the loss of one stopping the child (exit 4).
 */

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { leasePath, rid, type TestServer } from '../../server/testing/harness';
import { startCli, type CliHarness } from './support';
import { TIME_FACTOR } from '../../server/testing/wait';

let s: TestServer;
let cli: CliHarness;
let stop: () => Promise<void>;
before(async () => ({ s, cli, stop } = await startCli()));
after(() => stop());

function node(script: string): string[] {
  return [process.execPath, '-e', script];
}

async function inspect(route: string): Promise<{ owner_id: string; fencing_token: number; renewal_count: number } | undefined> {
  const r = await s.call('GET', leasePath(route));
  if (r.status === 404) return undefined;
  assert.equal(r.status, 200, r.text);
  return r.body.lease;
}

test('run --all holds every route while the child runs, passes their tokens in order, renews them and releases them all', async () => {
  const routes = ['lease://run-all/ok/a', 'lease://run-all/ok/b', 'lease://run-all/ok/c'];
  // The child waits until every lease has been renewed twice (a renewal every third of the TTL), then reports.
  const probe = `
    const routes = process.env.LEASEHOLD_ROUTES.split(' ');
    const get = (r) => fetch(process.env.LEASEHOLD_URL + '/api/v1/leases/' + r.slice('lease://'.length), { headers: { authorization: 'Bearer ' + process.env.PROBE_TOKEN } }).then((res) => res.json());
    const poll = async () => {
      const seen = await Promise.all(routes.map(get));
      if (seen.every((b) => b.lease && b.lease.renewal_count >= 2)) {
        console.log(JSON.stringify({ env: { routes: process.env.LEASEHOLD_ROUTES, tokens: process.env.LEASEHOLD_FENCING_TOKENS, ids: process.env.LEASEHOLD_LEASE_IDS, single: process.env.LEASEHOLD_ROUTE ?? null }, leases: seen.map((b) => b.lease) }));
        process.exit(7);
      }
      setTimeout(poll, 50);
    };
    poll();`;
  // 1 s × the CI time factor: short enough to see renewals soon, long enough for a loaded machine's delays.
  const r = await cli.run(['run', '--all', ...routes, '--ttl', `${TIME_FACTOR}s`, '--owner', 'migrator', '--', ...node(probe)], { env: { PROBE_TOKEN: s.token, LEASEHOLD_ROUTE: 'lease://outer/run/x' } });
  assert.equal(r.code, 7, r.stderr);
  const seen = JSON.parse(r.stdout) as { env: { routes: string; tokens: string; ids: string; single: string | null }; leases: { route: string; owner_id: string; fencing_token: number }[] };
  assert.equal(seen.env.routes, routes.join(' '));
  assert.deepEqual(seen.env.tokens.split(' '), seen.leases.map((l) => String(l.fencing_token)), 'tokens in the order of the routes');
  assert.equal(seen.env.ids.split(' ').length, 3);
  for (const id of seen.env.ids.split(' ')) assert.match(id, /^ls_[\w-]+$/);
  assert.equal(seen.env.single, null, 'no single-lease variables (an outer run\'s are removed)');
  assert.deepEqual(seen.leases.map((l) => l.owner_id), ['migrator', 'migrator', 'migrator']);
  for (const route of routes) assert.equal(await inspect(route), undefined, `${route} released when the child exited`);
});

test('run --all refuses when any route is held: exit 3 naming it, nothing acquired, the command never runs', async () => {
  const { sessionId } = await s.openSession('holder', 10_000);
  const held = await s.call('POST', leasePath('lease://run-all/held/b', 'acquire'), { session_id: sessionId, request_id: rid(), ttl_ms: 10_000 });
  assert.equal(held.status, 200, held.text);
  const r = await cli.run(['run', '--all', 'lease://run-all/held/a', 'lease://run-all/held/b', 'lease://run-all/held/c', '--', ...node("console.log('ran')")]);
  assert.equal(r.code, 3, r.stderr);
  assert.equal(r.stdout, '', 'the command did not run');
  assert.match(r.stderr, /lease:\/\/run-all\/held\/b is held; nothing was acquired/);
  assert.equal(await inspect('lease://run-all/held/a'), undefined);
  assert.equal(await inspect('lease://run-all/held/c'), undefined);
  assert.equal((await inspect('lease://run-all/held/b'))?.owner_id, 'holder');
});

test('run --all stops the child when one of its leases is lost, exits 4, and frees the others', async () => {
  const routes = ['lease://run-all/lost/a', 'lease://run-all/lost/b'];
  const run = cli.start(['run', '--all', ...routes, '--ttl', '3s', '--grace', '5s', '--', ...node("process.on('SIGTERM', () => { console.log('child got SIGTERM'); process.exit(0); }); console.log('started'); setInterval(() => {}, 1000);")]);
  await run.waitFor(/started/);
  const b = await inspect(routes[1]!);
  assert.ok(b);
  const forced = await s.call('POST', leasePath(routes[1]!, 'force-release'), { request_id: rid(), reason: 'testing run --all under loss', expected_fencing_token: b.fencing_token });
  assert.equal(forced.status, 200, forced.text);
  assert.equal(await run.exited, 4, run.stderr);
  assert.match(run.stdout, /child got SIGTERM/);
  assert.match(run.stderr, /the lease on lease:\/\/run-all\/lost\/b was lost/);
  assert.equal(await inspect(routes[0]!), undefined, 'the other lease was freed with the session');
});

test('run --all with --wait is a usage error', async () => {
  const r = await cli.run(['run', '--all', 'lease://run-all/usage/a', '--wait', '5s', '--', ...node('0')]);
  assert.equal(r.code, 2, r.stderr);
  assert.match(r.stderr, /--all never waits/);
});
