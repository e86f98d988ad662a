/**
 * The `leasehold` command line against a real server (docs/cli.md): each
 * command's table and `--json` output, the confirmation of operator actions
 * and their expected fencing token, login/logout, and exit codes.
 */

import assert from 'node:assert/strict';
import { chmodSync, existsSync, mkdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { leasePath, rid, type TestServer } from '../../server/testing/harness';
import { unreachableUrl } from '../sdk/support';
import { startCli, type CliHarness, jsonLines, tableRows } from './support';

let s: TestServer;
let cli: CliHarness;
let stop: () => Promise<void>;
before(async () => ({ s, cli, stop } = await startCli()));
after(() => stop());

interface Held {
  sessionId: string;
  leaseId: string;
  token: number;
}

async function hold(route: string, owner = 'worker-1', ttlMs = 60_000): Promise<Held> {
  const { sessionId } = await s.openSession(owner, 60_000);
  const r = await s.call('POST', leasePath(route, 'acquire'), { session_id: sessionId, request_id: rid(), ttl_ms: ttlMs });
  assert.equal(r.status, 200, r.text);
  return { sessionId, leaseId: r.body.lease.lease_id, token: r.body.lease.fencing_token };
}

async function release(route: string, h: Held): Promise<void> {
  const r = await s.call('POST', leasePath(route, 'release'), { session_id: h.sessionId, request_id: rid(), lease_id: h.leaseId, fencing_token: h.token });
  assert.equal(r.status, 200, r.text);
}

test('whoami prints the family, token id, root flag and grants as a table, and the same as JSON', async () => {
  const table = await cli.run(['whoami']);
  assert.equal(table.code, 0, table.stderr);
  const rows = new Map(tableRows(table.stdout).map((r) => [r[0], r[1]]));
  assert.equal(rows.get('family'), 'default');
  assert.equal(rows.get('root'), 'yes');
  assert.match(rows.get('token id') ?? '', /^tk_/);
  assert.equal(rows.get('grants'), 'lease://**#admin');

  const json = await cli.run(['whoami', '--json']);
  assert.equal(json.code, 0, json.stderr);
  const who = JSON.parse(json.stdout);
  assert.equal(who.family, 'default');
  assert.equal(who.root, true);
  assert.equal(who.token_id, rows.get('token id'));
});

test('login reads the token from stdin, checks it, saves it with mode 0600; later commands use it; logout deletes it', async () => {
  const env = { LEASEHOLD_URL: undefined, LEASEHOLD_TOKEN: undefined };
  const login = await cli.run(['login', '--url', s.url], { env, input: `${s.token}\n` });
  assert.equal(login.code, 0, login.stderr);
  const file = join(cli.configHome, 'leasehold', 'config.json');
  assert.equal(statSync(file).mode & 0o777, 0o600);
  assert.ok(!login.stdout.includes(s.token) && !login.stderr.includes(s.token), 'the token is never echoed');

  const who = await cli.run(['whoami', '--json'], { env });
  assert.equal(who.code, 0, who.stderr);
  assert.equal(JSON.parse(who.stdout).root, true);

  const logout = await cli.run(['logout'], { env });
  assert.equal(logout.code, 0);
  assert.equal(existsSync(file), false);
  const after = await cli.run(['whoami'], { env });
  assert.equal(after.code, 2, 'no server configured is a usage error');
  assert.match(after.stderr, /no server: pass --url, set LEASEHOLD_URL/);
});

test('login makes an existing config folder private (0700)', async () => {
  const folder = join(cli.configHome, 'leasehold');
  mkdirSync(folder, { recursive: true, mode: 0o755 });
  chmodSync(folder, 0o755);
  const login = await cli.run(['login', '--url', s.url], { env: { LEASEHOLD_URL: undefined, LEASEHOLD_TOKEN: undefined }, input: `${s.token}\n` });
  assert.equal(login.code, 0, login.stderr);
  assert.equal(statSync(folder).mode & 0o777, 0o700);
  assert.equal(statSync(join(folder, 'config.json')).mode & 0o777, 0o600);
  assert.equal((await cli.run(['logout'])).code, 0);
});

test('login with a wrong token saves nothing and says why', async () => {
  const r = await cli.run(['login', '--url', s.url], { env: { LEASEHOLD_TOKEN: undefined }, input: 'lh_not_a_real_token\n' });
  assert.equal(r.code, 1);
  assert.match(r.stderr, /invalid_credential/);
  assert.equal(existsSync(join(cli.configHome, 'leasehold', 'config.json')), false);
});

test('a server that cannot be reached is named in the error, with the cause (exit 1)', async () => {
  const url = await unreachableUrl();
  const r = await cli.run(['whoami', '--url', url]);
  assert.equal(r.code, 1);
  assert.equal(r.stderr, `leasehold: no answer to GET ${url}/api/v1/auth/whoami: connection refused (network_error)\n`);
});

test('--token-file overrides LEASEHOLD_TOKEN', async () => {
  const reader = await s.createToken(['lease://cli/**#read']);
  const file = join(cli.dir, 'reader-token');
  writeFileSync(file, `${reader}\n`);
  const r = await cli.run(['whoami', '--json', '--token-file', file]);
  assert.equal(r.code, 0, r.stderr);
  assert.deepEqual(JSON.parse(r.stdout).grants, ['lease://cli/**#read']);
});

test('ls prints held leases as an aligned table and as one JSON line per lease, filtered by owner', async () => {
  const a = await hold('lease://cli/ls/a', 'alpha');
  const b = await hold('lease://cli/ls/b', 'beta');
  const table = await cli.run(['ls', 'lease://cli/ls/*']);
  assert.equal(table.code, 0, table.stderr);
  const rows = tableRows(table.stdout);
  assert.deepEqual(rows[0], ['ROUTE', 'OWNER', 'INCARNATION', 'TOKEN', 'EXPIRES', 'RENEWALS', 'WAITERS']);
  assert.deepEqual(rows.slice(1).map((r) => [r[0], r[1], r[3], r[5], r[6]]), [
    ['lease://cli/ls/a', 'alpha', String(a.token), '0', '0'],
    ['lease://cli/ls/b', 'beta', String(b.token), '0', '0'],
  ]);
  assert.match(rows[1]![4]!, /^in (\d+s|1m 00s)$/);
  // Aligned: every row starts its second column at the same offset.
  const lines = table.stdout.trimEnd().split('\n');
  const at = lines.map((l) => /^\S+\s{2,}/.exec(l)?.[0].length);
  assert.equal(new Set(at).size, 1);

  const json = await cli.run(['ls', 'lease://cli/ls/*', '--json', '--owner', 'beta']);
  assert.equal(json.code, 0, json.stderr);
  const items = jsonLines(json.stdout);
  assert.deepEqual(items.map((i) => [i.route, i.owner_id]), [['lease://cli/ls/b', 'beta']]);
});

test('ls pages: the first page with a note that more match, every page with --all', async () => {
  for (const r of ['p1', 'p2', 'p3']) await hold(`lease://cli/page/${r}`);
  const first = await cli.run(['ls', 'lease://cli/page/*', '--limit', '2', '--json']);
  assert.equal(first.code, 0, first.stderr);
  assert.equal(jsonLines(first.stdout).length, 2);
  assert.match(first.stderr, /more leases match: --all/);
  const all = await cli.run(['ls', 'lease://cli/page/*', '--limit', '2', '--all']);
  assert.equal(all.code, 0, all.stderr);
  assert.deepEqual(tableRows(all.stdout).slice(1).map((r) => r[0]), ['lease://cli/page/p1', 'lease://cli/page/p2', 'lease://cli/page/p3']);
  assert.equal(all.stderr, '');
});

test('ls with no match says so on stderr, and stdout stays a bare table or empty JSON', async () => {
  const table = await cli.run(['ls', 'lease://cli/nothing/*']);
  assert.equal(table.code, 0, table.stderr);
  assert.deepEqual(tableRows(table.stdout), [['ROUTE', 'OWNER', 'INCARNATION', 'TOKEN', 'EXPIRES', 'RENEWALS', 'WAITERS']]);
  assert.equal(table.stderr, '(no held lease matches lease://cli/nothing/*)\n');
  const json = await cli.run(['ls', 'lease://cli/nothing/*', '--json', '--all', '--owner', 'nobody']);
  assert.equal(json.code, 0, json.stderr);
  assert.equal(json.stdout, '');
  assert.equal(json.stderr, '(no held lease matches lease://cli/nothing/* with --owner nobody)\n');
});

test('ls with a malformed selector exits 2 with the API message and correlation id', async () => {
  const r = await cli.run(['ls', 'lease://cli']);
  assert.equal(r.code, 2);
  assert.match(r.stderr, /invalid_selector, correlation id \S+/);
});

test('show prints every field, the checkpoint and the last audit events; --json holds the same', async () => {
  const route = 'lease://cli/show/doc';
  const h = await hold(route, 'shower');
  const cp = await s.call('PUT', leasePath(route, 'checkpoint'), { session_id: h.sessionId, request_id: rid(), lease_id: h.leaseId, fencing_token: h.token, value: { page: 12 } });
  assert.equal(cp.status, 200, cp.text);
  // On PostgreSQL the checkpoint may have been answered by the instance `show` does not ask, which
  // writes its audit events every 100 ms: both buffers are written first (docs/design.md "flushAudit").
  await s.flushAudit();
  const table = await cli.run(['show', route]);
  assert.equal(table.code, 0, table.stderr);
  const fields = new Map(tableRows(table.stdout.split('Last audit events')[0]!).map((r) => [r[0], r[1]]));
  assert.equal(fields.get('owner'), 'shower');
  assert.equal(fields.get('fencing token'), String(h.token));
  assert.match(fields.get('checkpoint') ?? '', /^v1 by token \d+, .*: \{"page":12\}$/);
  assert.match(table.stdout, /Last audit events\nTIME\s+EVENT\s+RESULT[\s\S]*lease_checkpoint[\s\S]*lease_acquire/);

  const json = await cli.run(['show', route, '--json']);
  assert.equal(json.code, 0, json.stderr);
  const doc = JSON.parse(json.stdout);
  assert.equal(doc.lease.owner_id, 'shower');
  assert.deepEqual(doc.checkpoint.value, { page: 12 });
  assert.deepEqual(doc.audit.map((e: { event_type: string }) => e.event_type).slice(0, 2), ['lease_checkpoint', 'lease_acquire']);

  const free = await cli.run(['show', 'lease://cli/show/nothing', '--json']);
  assert.equal(free.code, 0);
  assert.equal(JSON.parse(free.stdout).lease, null);
});

test('force-release with --yes frees the lease it showed and prints the result as JSON', async () => {
  const route = 'lease://cli/force/yes';
  const h = await hold(route);
  const r = await cli.run(['force-release', route, '--reason', 'stuck renderer, OPS-1', '--yes', '--json']);
  assert.equal(r.code, 0, r.stderr);
  assert.deepEqual(JSON.parse(r.stdout), { route, fencing_token: h.token });
  assert.match(r.stderr, new RegExp(`ROUTE\\s+OWNER[^\\n]*\\n${route}\\s+worker-1\\s+\\S+\\s+${h.token}\\b`), 'the lease acted on is shown on stderr, --yes or not');
  assert.equal((await s.call('GET', leasePath(route))).status, 404);
});

test('force-release asks for the resource name and does nothing without it', async () => {
  const route = 'lease://cli/force/ask';
  await hold(route);
  const wrong = await cli.run(['force-release', route, '--reason', 'stuck renderer, OPS-2'], { input: 'something-else\n' });
  assert.equal(wrong.code, 1);
  assert.match(wrong.stderr, /Type its resource name \(ask\) to confirm/);
  assert.match(wrong.stderr, /not confirmed; nothing was done/);
  assert.equal((await s.call('GET', leasePath(route))).status, 200);

  const right = await cli.run(['force-release', route, '--reason', 'stuck renderer, OPS-2'], { input: 'ask\n' });
  assert.equal(right.code, 0, right.stderr);
  assert.match(right.stdout, /Force-released lease:\/\/cli\/force\/ask/);
  assert.equal((await s.call('GET', leasePath(route))).status, 404);
});

test('force-release refuses a lease that changed hands while the operator was confirming, and the successor keeps it (exit 3)', async () => {
  const route = 'lease://cli/force/changed';
  const first = await hold(route, 'first');
  const run = cli.start(['force-release', route, '--reason', 'stuck renderer, OPS-3'], { keepStdin: true });
  await run.waitFor(/to confirm: $/);
  assert.match(run.stderr, new RegExp(`${route}\\s+first\\s+\\S+\\s+${first.token}\\b`), 'the lease shown is the first holder\'s');
  await release(route, first);
  const successor = await hold(route, 'successor');
  run.child.stdin!.end('changed\n');
  assert.equal(await run.exited, 3, run.stderr);
  assert.match(run.stderr, new RegExp(`changed since it was shown \\(expected fencing token ${first.token}\\); nothing was done: .* \\(lease_mismatch, correlation id c_[\\w-]+\\)\n$`));
  const now = await s.call('GET', leasePath(route));
  assert.equal(now.body.lease.owner_id, 'successor');
  assert.equal(now.body.lease.fencing_token, successor.token);
});

test('force-release with a --token that is not the current one is refused (exit 3)', async () => {
  const route = 'lease://cli/force/token';
  const h = await hold(route);
  const r = await cli.run(['force-release', route, '--reason', 'stuck renderer, OPS-4', '--token', String(h.token + 100), '--yes']);
  assert.equal(r.code, 3);
  // Nothing was shown before the operator typed the token: the message says what they gave.
  assert.match(
    r.stderr,
    new RegExp(`the lease on ${route} does not have the fencing token you gave \\(--token ${h.token + 100}\\); nothing was done: the current lease has fencing token ${h.token}, not ${h.token + 100} \\(lease_mismatch, correlation id c_[\\w-]+\\)`),
  );
  assert.doesNotMatch(r.stderr, /changed since it was shown/);
  assert.equal((await s.call('GET', leasePath(route))).status, 200);
});

test('force-release of a free route exits 3 and a short reason is a usage error (exit 2) before anything is read', async () => {
  const free = await cli.run(['force-release', 'lease://cli/force/none', '--reason', 'nothing here, OPS-5', '--yes']);
  assert.equal(free.code, 3);
  assert.match(free.stderr, /no lease is held on lease:\/\/cli\/force\/none; nothing was done \(lease_not_found, correlation id c_[\w-]+\)/);
  const revokeFree = await cli.run(['revoke', 'lease://cli/force/none', '--reason', 'nothing here, OPS-5', '--yes']);
  assert.equal(revokeFree.code, 3);
  assert.match(revokeFree.stderr, /\(lease_not_found, correlation id c_[\w-]+\)/);
  const short = await cli.run(['force-release', 'lease://cli/force/none', '--reason', 'short', '--yes']);
  assert.equal(short.code, 2);
  assert.match(short.stderr, /10 to 500 characters/);
});

test('revoke --close-session revokes the lease it showed and closes the holder\'s session', async () => {
  const route = 'lease://cli/revoke/a';
  const h = await hold(route, 'compromised');
  await hold('lease://cli/revoke/b', 'compromised'); // another session: untouched
  const r = await cli.run(['revoke', route, '--reason', 'credential leaked, SEC-77', '--close-session', '--yes', '--json']);
  assert.equal(r.code, 0, r.stderr);
  assert.deepEqual(JSON.parse(r.stdout), { route, fencing_token: h.token, sessions_closed: 1 });
  const ka = await s.call('POST', '/api/v1/sessions/keepalive', { session_id: h.sessionId });
  assert.equal(ka.status, 404);

  const plainRoute = 'lease://cli/revoke/plain';
  const plain = await hold(plainRoute, 'plain');
  const text = await cli.run(['revoke', plainRoute, '--reason', 'credential leaked, SEC-78'], { input: 'plain\n' });
  assert.equal(text.code, 0, text.stderr);
  assert.equal(text.stdout, `Revoked ${plainRoute} (fencing token ${plain.token}).\n`);
  assert.match(text.stderr, /revoke this lease\? Type its resource name \(plain\) to confirm/);
});

test('revoke --close-session --yes shows the lease and how many other leases its session holds, and says what it closed', async () => {
  const route = 'lease://cli/revoke-session/a';
  const { sessionId } = await s.openSession('leaky', 60_000);
  const tokens: number[] = [];
  for (const r of [route, 'lease://cli/revoke-session/b', 'lease://cli/revoke-other/c']) {
    const a = await s.call('POST', leasePath(r, 'acquire'), { session_id: sessionId, request_id: rid(), ttl_ms: 60_000 });
    assert.equal(a.status, 200, a.text);
    tokens.push(a.body.lease.fencing_token);
  }
  const r = await cli.run(['revoke', route, '--reason', 'credential leaked, SEC-79', '--close-session', '--yes']);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stderr, new RegExp(`${route}\\s+leaky\\s+\\S+\\s+${tokens[0]}\\b`));
  assert.match(r.stderr, /--close-session: its holder's session \(incarnation \S+\) also holds 2 other leases, released with it/);
  assert.equal(r.stdout, `Revoked ${route} (fencing token ${tokens[0]}); closed its holder's session, which released its 2 other leases.\n`);
  assert.equal((await s.call('GET', leasePath('lease://cli/revoke-other/c'))).status, 404);
});

test('request-release shows the lease, sends the token it showed, and the lease carries the request; --json prints the result', async () => {
  const route = 'lease://cli/ask/one';
  const h = await hold(route);
  const r = await cli.run(['request-release', route, '--reason', 'draining renderer-7, OPS-30', '--json']);
  assert.equal(r.code, 0, r.stderr);
  const result = JSON.parse(r.stdout);
  assert.equal(result.fencing_token, h.token);
  assert.equal(result.release_request.reason, 'draining renderer-7, OPS-30');
  assert.match(r.stderr, /lease:\/\/cli\/ask\/one\s+worker-1/, 'the lease is shown on stderr');
  const show = await cli.run(['show', route]);
  assert.match(show.stdout, /release request\s+draining renderer-7, OPS-30 \(asked .* ago by tk_/);
  const lease = await s.call('GET', leasePath(route));
  assert.equal(lease.body.lease.release_request.reason, 'draining renderer-7, OPS-30', 'the holder keeps the lease with the request');
  await release(route, h);
});

test('request-release with a stale --token or on a free route changes nothing (exit 3); a short reason is a usage error', async () => {
  const route = 'lease://cli/ask/stale';
  const h = await hold(route);
  const stale = await cli.run(['request-release', route, '--reason', 'draining renderer-7, OPS-31', '--token', String(h.token + 100)]);
  assert.equal(stale.code, 3, stale.stderr);
  assert.match(stale.stderr, /does not have the fencing token you gave \(--token \d+\); nothing was done: .* \(lease_mismatch, correlation id c_[\w-]+\)/);
  assert.equal((await s.call('GET', leasePath(route))).body.lease.release_request, null);
  const free = await cli.run(['request-release', 'lease://cli/ask/none', '--reason', 'nothing here, OPS-32']);
  assert.equal(free.code, 3);
  assert.match(free.stderr, /no lease is held on lease:\/\/cli\/ask\/none; nothing was done \(lease_not_found, correlation id c_[\w-]+\)/);
  assert.equal((await cli.run(['request-release', route, '--reason', 'short'])).code, 2);
  await release(route, h);
});

test('audit prints the trail newest first as a table and JSON lines, filtered by route and type', async () => {
  const route = 'lease://cli/audit/x';
  const h = await hold(route, 'auditor');
  await release(route, h);
  // On two instances each buffers its own events (flushed every 100 ms); a read flushes only its own.
  await s.flushAudit();
  const table = await cli.run(['audit', '--route', 'lease://cli/audit/*']);
  assert.equal(table.code, 0, table.stderr);
  const rows = tableRows(table.stdout);
  assert.deepEqual(rows[0], ['TIME', 'EVENT', 'RESULT', 'ROUTE', 'OWNER', 'FENCING TOKEN', 'ACTOR', 'REASON']);
  assert.deepEqual(rows.slice(1).map((r) => r[1]), ['lease_release', 'lease_acquire']);

  const json = await cli.run(['audit', '--route', 'lease://cli/audit/*', '--type', 'lease_acquire', '--since', '1h', '--json']);
  assert.equal(json.code, 0, json.stderr);
  const events = jsonLines(json.stdout);
  assert.deepEqual(events.map((e) => [e.event_type, e.route, e.owner_id]), [['lease_acquire', route, 'auditor']]);
});

test('audit and show name the token that acted, in its own column apart from the fencing token', async () => {
  const route = 'lease://cli/actor/doc';
  const h = await hold(route, 'held-by-worker');
  const ops = await s.createToken(['lease://cli/**#admin']);
  const opsId = JSON.parse((await cli.run(['whoami', '--json'], { env: { LEASEHOLD_TOKEN: ops } })).stdout).token_id as string;
  const forced = await cli.run(['force-release', route, '--reason', 'renderer hung, OPS-77', '--yes'], { env: { LEASEHOLD_TOKEN: ops } });
  assert.equal(forced.code, 0, forced.stderr);
  await s.flushAudit();
  const rootId = (await s.call('GET', '/api/v1/auth/whoami')).body.token_id as string;
  const expectRows = (rows: string[][]): void => {
    assert.deepEqual(rows[0], ['TIME', 'EVENT', 'RESULT', 'ROUTE', 'OWNER', 'FENCING TOKEN', 'ACTOR', 'REASON']);
    const byEvent = new Map(rows.slice(1).map((r) => [r[1], r]));
    assert.deepEqual(byEvent.get('lease_force_release')?.slice(4, 8), ['held-by-worker', String(h.token), opsId, 'renderer hung, OPS-77']);
    assert.deepEqual(byEvent.get('lease_acquire')?.slice(4, 7), ['held-by-worker', String(h.token), rootId]);
  };
  const audit = await cli.run(['audit', '--route', route]);
  assert.equal(audit.code, 0, audit.stderr);
  expectRows(tableRows(audit.stdout));
  const show = await cli.run(['show', route]);
  assert.equal(show.code, 0, show.stderr);
  expectRows(tableRows(show.stdout.split('Last audit events')[1]!));
});

test('audit --follow prints events recorded after it started, once each', async () => {
  const run = cli.start(['audit', '--route', 'lease://cli/follow/*', '--follow', '--json', '--interval', '200ms']);
  await new Promise((r) => setTimeout(r, 500));
  const h = await hold('lease://cli/follow/x', 'follower');
  await release('lease://cli/follow/x', h);
  await run.waitFor(/lease_release/);
  await new Promise((r) => setTimeout(r, 600)); // a few more polls: nothing is printed twice
  run.child.kill('SIGINT');
  assert.equal(await run.exited, 0, run.stderr);
  assert.deepEqual(jsonLines(run.stdout).map((e) => e.event_type), ['lease_acquire', 'lease_release']);
});

test('audit --follow as a table prints its header once and absolute times, which stay true in scrollback', async () => {
  const run = cli.start(['audit', '--route', 'lease://cli/follow-table/*', '--follow', '--interval', '200ms']);
  await run.waitFor(/^TIME\s+EVENT/);
  const h = await hold('lease://cli/follow-table/x', 'follower');
  await run.waitFor(/lease_acquire/);
  await release('lease://cli/follow-table/x', h);
  await run.waitFor(/lease_release/); // a later poll: a second batch
  run.child.kill('SIGINT');
  assert.equal(await run.exited, 0, run.stderr);
  const rows = tableRows(run.stdout);
  assert.equal(rows.filter((r) => r[0] === 'TIME').length, 1, run.stdout);
  assert.deepEqual(rows.slice(1).map((r) => r[1]), ['lease_acquire', 'lease_release']);
  for (const r of rows.slice(1)) assert.match(r[0]!, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  assert.doesNotMatch(run.stdout, / ago/);
});

test('tokens create prints the secret once; tokens ls shows it; tokens revoke refuses it afterwards', async () => {
  const created = await cli.run(['tokens', 'create', '--name', 'cli-ci', '--grant', 'lease://cli/**#read', '--grant', 'lease://cli/jobs/*#write', '--expires', '2h', '--json']);
  assert.equal(created.code, 0, created.stderr);
  const { token_id, token } = JSON.parse(created.stdout);
  assert.match(token, /^lh_/);
  const plain = await cli.run(['tokens', 'create', '--name', 'cli-plain', '--grant', 'lease://cli/**#read']);
  assert.equal(plain.code, 0, plain.stderr);
  assert.match(plain.stdout, /^lh_\S+\n$/, 'only the secret on stdout, for $(…)');
  assert.match(plain.stderr, /^Created tk_\S+ in family default\. The secret above is shown only now\.\n$/);

  const table = await cli.run(['tokens', 'ls']);
  assert.equal(table.code, 0, table.stderr);
  const rows = tableRows(table.stdout);
  assert.deepEqual(rows[0], ['TOKEN ID', 'NAME', 'FAMILY', 'ROOT', 'CREATED', 'EXPIRES', 'GRANTS']);
  const row = rows.find((r) => r[0] === token_id);
  assert.ok(row, table.stdout);
  assert.deepEqual([row[1], row[3], row[6]], ['cli-ci', 'no', 'lease://cli/**#read lease://cli/jobs/*#write']);
  assert.match(row[5]!, /^in (1h 59m|2h 00m)$/);
  const json = jsonLines(( await cli.run(['tokens', 'ls', '--json'])).stdout);
  assert.ok(json.some((t) => t.token_id === token_id && t.name === 'cli-ci'));
  assert.ok(json.every((t) => !('token' in t)), 'secrets are never listed');

  const revoked = await cli.run(['tokens', 'revoke', token_id]);
  assert.equal(revoked.code, 0, revoked.stderr);
  const refused = await cli.run(['whoami'], { env: { LEASEHOLD_TOKEN: token } });
  assert.equal(refused.code, 1);
  assert.match(refused.stderr, /invalid_credential/);
});

test('embed-token prints a read-only token for one selector that expires', async () => {
  const r = await cli.run(['embed-token', 'lease://cli/embed/*', '--ttl', '1h', '--json']);
  assert.equal(r.code, 0, r.stderr);
  const created = JSON.parse(r.stdout);
  const left = Date.parse(created.expires_at) - Date.now();
  assert.ok(left > 55 * 60_000 && left <= 60 * 60_000, created.expires_at);
  const who = JSON.parse((await cli.run(['whoami', '--json'], { env: { LEASEHOLD_TOKEN: created.token } })).stdout);
  assert.deepEqual(who.grants, ['lease://cli/embed/*#read']);

  const plain = await cli.run(['embed-token', 'lease://cli/embed/*']);
  assert.match(plain.stdout, /^lh_\S+\n$/);
  assert.match(plain.stderr, /read-only on lease:\/\/cli\/embed\/\*/);
});

test('watch --json prints the feed state and one line per change as leases come and go', async () => {
  const run = cli.start(['watch', 'lease://cli/watch/*', '--json']);
  await run.waitFor(/"state":"ready"/);
  const h = await hold('lease://cli/watch/a', 'watched');
  await run.waitFor(/"cause":"acquired"/);
  await release('lease://cli/watch/a', h);
  await run.waitFor(/"cause":"released"/);
  run.child.kill('SIGINT');
  assert.equal(await run.exited, 0, run.stderr);
  const lines = jsonLines(run.stdout);
  assert.deepEqual(lines.filter((l) => l.type === 'change').map((l) => [l.route, l.cause, (l.lease as { owner_id?: string } | null)?.owner_id ?? null]), [
    ['lease://cli/watch/a', 'acquired', 'watched'],
    ['lease://cli/watch/a', 'released', null],
  ]);
});

test('watch --json against a server it cannot reach says so in a state line, starting from connecting', async () => {
  const url = await unreachableUrl();
  const run = cli.start(['watch', 'lease://cli/watch3/*', '--json', '--url', url]);
  try {
    await run.waitFor(/"error"/);
  } finally {
    run.child.kill('SIGINT');
  }
  assert.equal(await run.exited, 0, run.stderr);
  const lines = jsonLines(run.stdout);
  assert.deepEqual(lines[0], { type: 'state', state: 'connecting' });
  assert.deepEqual(lines[1], {
    type: 'state',
    state: 'connecting',
    error: { code: 'network_error', message: `cannot open the live stream at ${url}/api/v1/inventory/stream: connection refused` },
  });
});

test('watch into a pipe against a server it cannot reach shows why in its state line, and that it retries (the terminal view: watch.test.ts)', async () => {
  const url = await unreachableUrl();
  const run = cli.start(['watch', 'lease://cli/watch3/*', '--url', url]);
  try {
    await run.waitFor(new RegExp(`^lease://cli/watch3/\\*\\s+connecting… cannot open the live stream at ${url}/api/v1/inventory/stream: connection refused; retrying\\s+0 held`, 'm'));
  } finally {
    run.child.kill('SIGINT');
  }
  assert.equal(await run.exited, 0, run.stderr);
});

test('a wildcard where a route is needed is a usage error that says so plainly', async () => {
  for (const cmd of [['show'], ['force-release', '--reason', 'stuck renderer, OPS-9', '--yes'], ['run']]) {
    const args = cmd[0] === 'run' ? ['run', 'lease://cli/show/*', '--', 'true'] : [cmd[0]!, 'lease://cli/show/*', ...cmd.slice(1)];
    const r = await cli.run(args);
    assert.equal(r.code, 2, cmd[0]);
    assert.equal(r.stderr, 'leasehold: "lease://cli/show/*" is not a valid route: it cannot contain wildcards (invalid_request)\n', cmd[0]);
  }
});

test('usage mistakes exit 2: an unknown option, a bad duration, a missing argument', async () => {
  assert.equal((await cli.run(['ls', 'lease://cli/**', '--bogus'])).code, 2);
  const bad = await cli.run(['run', 'lease://cli/x/y', '--ttl', 'soon', '--', 'true']);
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /a duration such as 500ms/);
  assert.equal((await cli.run(['show'])).code, 2);
});

test('--help on every command shows an example', async () => {
  const top = await cli.run(['--help']);
  assert.equal(top.code, 0);
  assert.match(top.stdout, /request-release/);
  assert.match(top.stdout, /policies/);
  for (const cmd of [['login'], ['logout'], ['whoami'], ['ls'], ['show'], ['watch'], ['force-release'], ['revoke'], ['audit'], ['tokens'], ['tokens', 'ls'], ['tokens', 'create'], ['tokens', 'revoke'], ['embed-token'], ['request-release'], ['policies'], ['policies', 'ls'], ['policies', 'set'], ['policies', 'rm'], ['policies', 'explain'], ['run']]) {
    const r = await cli.run([...cmd, '--help']);
    assert.equal(r.code, 0, cmd.join(' '));
    assert.match(r.stdout, /Examples?:\n {2}\$ leasehold /, cmd.join(' '));
  }
});
