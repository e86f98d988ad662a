/**
 * `leasehold policies` and `--skip-lock-delay` against a real server
 * (docs/cli.md, docs/policies.md): the table and `--json` output, a refused
 * bad policy that stores nothing, explain, delete, and lock-delay after an
 * operator's force-release with and without the flag.
 */

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { leasePath, rid, type TestServer } from '../../server/testing/harness';
import { startCli, type CliHarness, jsonLines, tableRows } from './support';

let s: TestServer;
let cli: CliHarness;
let stop: () => Promise<void>;
before(async () => ({ s, cli, stop } = await startCli()));
after(() => stop());

async function hold(route: string): Promise<number> {
  const { sessionId } = await s.openSession('worker-1', 60_000);
  const r = await s.call('POST', leasePath(route, 'acquire'), { session_id: sessionId, request_id: rid(), ttl_ms: 60_000 });
  assert.equal(r.status, 200, r.text);
  return r.body.lease.fencing_token as number;
}

async function acquireStatus(route: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const { sessionId } = await s.openSession('successor', 60_000);
  const r = await s.call('POST', leasePath(route, 'acquire'), { session_id: sessionId, request_id: rid(), ttl_ms: 60_000 });
  return { status: r.status, body: r.body };
}

test('policies set stores the fields given (the rest unset) and prints the policy as a table and as JSON', async () => {
  const r = await cli.run(['policies', 'set', 'lease://pol/db/**', '--ttl-min', '10s', '--ttl-max', '1m', '--lock-delay', '15s', '--max-waiters', '8', '--reason', 'primaries survive a GC pause']);
  assert.equal(r.code, 0, r.stderr);
  const rows = tableRows(r.stdout);
  assert.deepEqual(rows[0], ['SELECTOR', 'TTL MIN', 'TTL MAX', 'TTL DEFAULT', 'MAX LIFETIME', 'LOCK DELAY', 'MAX WAITERS', 'UPDATED', 'BY']);
  assert.deepEqual(rows[1]!.slice(0, 7), ['lease://pol/db/**', '10s', '1m 00s', '-', '-', '15s', '8']);

  const json = await cli.run(['policies', 'set', 'lease://pol/batch/**', '--max-waiters', '0', '--lock-delay', '0', '--reason', 'batch work is fenced, no delay', '--json']);
  assert.equal(json.code, 0, json.stderr);
  const p = JSON.parse(json.stdout);
  assert.equal(p.selector, 'lease://pol/batch/**');
  assert.equal(p.max_waiters, 0);
  assert.equal(p.lock_delay_ms, 0);
  assert.equal(p.ttl_min_ms, null);
});

test('policies ls lists the policies within a selector as a table and as one JSON line each', async () => {
  await cli.run(['policies', 'set', 'lease://polls/a/*', '--ttl-default', '20s', '--reason', 'listing test, first']);
  await cli.run(['policies', 'set', 'lease://polls/b/*', '--max-lifetime', '1h', '--reason', 'listing test, second']);
  const table = await cli.run(['policies', 'ls', 'lease://polls/**']);
  assert.equal(table.code, 0, table.stderr);
  const rows = tableRows(table.stdout);
  assert.equal(rows[0]![0], 'SELECTOR');
  assert.deepEqual(rows.slice(1).map((r) => [r[0], r[3], r[4]]), [
    ['lease://polls/a/*', '20s', '-'],
    ['lease://polls/b/*', '-', '1h 00m'],
  ]);

  const json = await cli.run(['policies', 'ls', 'lease://polls/**', '--json']);
  assert.equal(json.code, 0, json.stderr);
  assert.deepEqual(jsonLines(json.stdout).map((p) => [p.selector, p.ttl_default_ms, p.max_lifetime_ms]), [
    ['lease://polls/a/*', 20_000, null],
    ['lease://polls/b/*', null, 3_600_000],
  ]);

  const none = await cli.run(['policies', 'ls', 'lease://polnothing/**']);
  assert.equal(none.code, 0, none.stderr);
  assert.equal(none.stdout, '');
  assert.match(none.stderr, /no policies within lease:\/\/polnothing\/\*\*/);
});

test('policies set refuses inconsistent bounds with the API error (exit 2) and stores nothing; a missing reason is a usage error', async () => {
  const bad = await cli.run(['policies', 'set', 'lease://pol/bad/**', '--ttl-min', '1m', '--ttl-max', '10s', '--reason', 'min above max, must fail']);
  assert.equal(bad.code, 2, bad.stderr);
  assert.match(bad.stderr, /invalid_request, correlation id /);
  const noReason = await cli.run(['policies', 'set', 'lease://pol/bad/**', '--ttl-max', '10s']);
  assert.equal(noReason.code, 2);
  assert.match(noReason.stderr, /--reason/);
  const badValue = await cli.run(['policies', 'set', 'lease://pol/bad/**', '--max-waiters', '-1', '--reason', 'negative waiters, must fail']);
  assert.equal(badValue.code, 2);
  const ls = await cli.run(['policies', 'ls', 'lease://pol/bad/**', '--json']);
  assert.equal(ls.stdout, '', 'nothing was stored');
});

test('policies explain names the most specific policy and the limits a route gets; without one, the global limits', async () => {
  await cli.run(['policies', 'set', 'lease://polex/**', '--lock-delay', '5s', '--reason', 'broad policy for explain']);
  await cli.run(['policies', 'set', 'lease://polex/*/primary', '--lock-delay', '20s', '--ttl-max', '30s', '--reason', 'specific policy for explain']);
  const r = await cli.run(['policies', 'explain', 'lease://polex/eu/primary']);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /policy lease:\/\/polex\/\*\/primary applies/);
  const rows = new Map(tableRows(r.stdout).map((row) => [row[0], row.slice(1)]));
  assert.deepEqual(rows.get('lock_delay_ms'), ['20s', 'policy']);
  assert.deepEqual(rows.get('ttl_max_ms'), ['30s', 'policy']);
  assert.equal(rows.get('ttl_min_ms')![1], 'global');

  const json = await cli.run(['policies', 'explain', 'lease://polex/eu/replica', '--json']);
  assert.equal(json.code, 0, json.stderr);
  const e = JSON.parse(json.stdout);
  assert.equal(e.policy.selector, 'lease://polex/**');
  assert.equal(e.limits.lock_delay_ms, 5_000);

  const none = await cli.run(['policies', 'explain', 'lease://pol-none/a/b', '--json']);
  assert.equal(none.code, 0, none.stderr);
  assert.equal(JSON.parse(none.stdout).policy, null);
  assert.deepEqual([JSON.parse(none.stdout).limits.max_lifetime_ms, JSON.parse(none.stdout).limits.max_lifetime_default_ms], [86_400_000, 3_600_000], 'the default is not the cap');

  const bad = await cli.run(['policies', 'explain', 'lease://polex/eu/primary/extra']);
  assert.equal(bad.code, 2, 'a route with four segments is a usage error');
  assert.match(bad.stderr, /is not a valid route: .*\(invalid_request\)/);
});

test('policies rm deletes with a reason; deleting it again is refused (exit 1, not_found)', async () => {
  await cli.run(['policies', 'set', 'lease://pol/rm/**', '--max-waiters', '3', '--reason', 'to be deleted shortly']);
  const rm = await cli.run(['policies', 'rm', 'lease://pol/rm/**', '--reason', 'no longer needed, OPS-9']);
  assert.equal(rm.code, 0, rm.stderr);
  assert.equal((await cli.run(['policies', 'ls', 'lease://pol/rm/**', '--json'])).stdout, '');
  const again = await cli.run(['policies', 'rm', 'lease://pol/rm/**', '--reason', 'no longer needed, OPS-9']);
  assert.equal(again.code, 1);
  assert.match(again.stderr, /not_found/);
  const noReason = await cli.run(['policies', 'rm', 'lease://pol/rm/**']);
  assert.equal(noReason.code, 2);
});

test('force-release leaves the policy\'s lock-delay in place, and --skip-lock-delay frees the route at once', async () => {
  await cli.run(['policies', 'set', 'lease://pol/ld/*', '--lock-delay', '60s', '--reason', 'long delay for the test']);
  await hold('lease://pol/ld/kept');
  const kept = await cli.run(['force-release', 'lease://pol/ld/kept', '--reason', 'stuck holder, OPS-10', '--yes']);
  assert.equal(kept.code, 0, kept.stderr);
  const blocked = await acquireStatus('lease://pol/ld/kept');
  assert.equal(blocked.status, 409);
  assert.equal(typeof blocked.body.lock_delay_until, 'string');
  const shown = await cli.run(['show', 'lease://pol/ld/kept']);
  assert.match(shown.stdout, /lock-delay\s+no new holder until \S+ \(in (5\ds|1m 00s)\)/);
  const shownJson = JSON.parse((await cli.run(['show', 'lease://pol/ld/kept', '--json'])).stdout);
  assert.equal(shownJson.lock_delay_until, new Date(Date.parse(blocked.body.lock_delay_until as string)).toISOString());

  await hold('lease://pol/ld/skipped');
  const skipped = await cli.run(['force-release', 'lease://pol/ld/skipped', '--reason', 'host confirmed dead, OPS-11', '--yes', '--skip-lock-delay']);
  assert.equal(skipped.code, 0, skipped.stderr);
  assert.equal((await acquireStatus('lease://pol/ld/skipped')).status, 200);

  await hold('lease://pol/ld/revoked');
  const revoked = await cli.run(['revoke', 'lease://pol/ld/revoked', '--reason', 'credential leaked, SEC-78', '--yes', '--skip-lock-delay']);
  assert.equal(revoked.code, 0, revoked.stderr);
  assert.equal((await acquireStatus('lease://pol/ld/revoked')).status, 200);
});
