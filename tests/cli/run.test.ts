/**
 * `leasehold run <route> -- <command>` against a real server: the child's
 * environment (the lease's variables in, the credential out unless
 * `--pass-token`), its exit code, the release on exit, SIGTERM then SIGKILL
 * after the grace when the lease is force-released (exit 4), to the child's
 * whole process group (what it started in the background too), a held route
 * (exit 3), and `--wait` queueing behind a holder.
 */

import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { leasePath, rid, type TestServer } from '../../server/testing/harness';
import { waitFor } from '../../server/testing/wait';
import { startCli, type CliHarness } from './support';

let s: TestServer;
let cli: CliHarness;
let stop: () => Promise<void>;
before(async () => ({ s, cli, stop } = await startCli()));
after(() => stop());

/** `node -e SCRIPT` as the command `run` supervises. */
function node(script: string): string[] {
  return [process.execPath, '-e', script];
}

async function inspect(route: string): Promise<{ owner_id: string; fencing_token: number; waiters: number } | undefined> {
  const r = await s.call('GET', leasePath(route));
  if (r.status === 404) return undefined;
  assert.equal(r.status, 200, r.text);
  return r.body.lease;
}

test('run gives the child LEASEHOLD_ROUTE, LEASEHOLD_FENCING_TOKEN and LEASEHOLD_LEASE_ID while it holds the lease, exits with its code and releases', async () => {
  const route = 'lease://run/env/job';
  // The child has no LEASEHOLD_TOKEN (no --pass-token): the probe gets the token another way.
  const probe = `
    const r = process.env.LEASEHOLD_ROUTE, t = process.env.LEASEHOLD_FENCING_TOKEN, id = process.env.LEASEHOLD_LEASE_ID;
    fetch(process.env.LEASEHOLD_URL + '/api/v1/leases/run/env/job', { headers: { authorization: 'Bearer ' + process.env.PROBE_TOKEN } })
      .then((res) => res.json())
      .then((b) => { console.log(JSON.stringify({ r, t, id, holder: b.lease.owner_id, token: b.lease.fencing_token })); process.exit(7); });`;
  const r = await cli.run(['run', route, '--owner', 'cron-1', '--ttl', '5s', '--', ...node(probe)], { env: { PROBE_TOKEN: s.token } });
  assert.equal(r.code, 7, r.stderr);
  const seen = JSON.parse(r.stdout);
  assert.equal(seen.r, route);
  assert.equal(seen.holder, 'cron-1', 'the lease is held while the child runs');
  assert.equal(seen.t, String(seen.token));
  assert.match(seen.id, /^ls_[\w-]+$/, 'the lease id (the API shows it to the holder only; checked against the store below)');
  assert.equal(await inspect(route), undefined, 'released when the child exited');
  await s.flushAudit(); // on PostgreSQL the other instance may still buffer the event
  const audit = await s.call('GET', `/api/v1/audit?route=${encodeURIComponent(route)}&limit=5`);
  assert.equal(audit.body.items[0].event_type, 'lease_release', 'released, not left to expire');
});

test('run exits 0 when the child succeeds, and 128 + n when a signal n ended it', async () => {
  assert.equal((await cli.run(['run', 'lease://run/code/ok', '--', ...node('process.exit(0)')])).code, 0);
  const killed = await cli.run(['run', 'lease://run/code/killed', '--', ...node("process.kill(process.pid, 'SIGKILL')")]);
  assert.equal(killed.code, 137);
  assert.equal(await inspect('lease://run/code/killed'), undefined);
});

test('run passes SIGTERM sent to it on to the child, and exits with the child\'s code', async () => {
  const route = 'lease://run/signal/job';
  const run = cli.start(['run', route, '--', ...node("process.on('SIGTERM', () => { console.log('child got SIGTERM'); process.exit(3); }); console.log('started'); setInterval(() => {}, 1000);")]);
  await run.waitFor(/started/);
  run.child.kill('SIGTERM');
  assert.equal(await run.exited, 3, run.stderr);
  assert.match(run.stdout, /child got SIGTERM/);
  assert.equal(await inspect(route), undefined);
});

test('a force-release of its lease makes run send SIGTERM, then SIGKILL after the grace, and exit 4', async () => {
  const route = 'lease://run/lost/job';
  // The child ignores SIGTERM, so only the SIGKILL after the grace ends it.
  const run = cli.start(['run', route, '--ttl', '6s', '--grace', '1500ms', '--', ...node("process.on('SIGTERM', () => console.log('TERM at ' + Date.now())); console.log('started'); setInterval(() => {}, 1000);")]);
  await run.waitFor(/started/);
  const held = await inspect(route);
  assert.ok(held);
  const forced = await s.call('POST', leasePath(route, 'force-release'), { request_id: rid(), reason: 'testing run under loss', expected_fencing_token: held.fencing_token });
  assert.equal(forced.status, 200, forced.text);
  const sentAt = Date.now();
  await run.waitFor(/TERM at (\d+)/, 5000);
  const termAt = Number(/TERM at (\d+)/.exec(run.stdout)![1]);
  // Through the live feed the loss is seen well before the next renewal (2 s).
  assert.ok(termAt - sentAt < 1500, `SIGTERM ${termAt - sentAt} ms after the force-release`);
  assert.equal(await run.exited, 4, run.stderr);
  const endedAt = Date.now();
  assert.ok(endedAt - termAt >= 1400, `SIGKILL came ${endedAt - termAt} ms after SIGTERM, before the 1.5 s grace`);
  assert.match(run.stderr, /the lease on lease:\/\/run\/lost\/job was lost .*sending SIGTERM, SIGKILL in 1s|SIGKILL in 2s/);
});

/** Is `pid` still running (a zombie, dead but not yet reaped, counts as gone)? */
function running(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ESRCH') return false;
    throw e;
  }
  try {
    return !/^\d+ \(.*\) Z/s.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return true; // no /proc (macOS): kill(pid, 0) is all there is
  }
}

test('a force-release stops what the command started too: the whole process group gets SIGTERM, and run exits 4', async () => {
  const route = 'lease://run/lost/group';
  const pidFile = join(cli.dir, 'group-pids');
  // sh (the child) starts two sleeps (grandchildren run never sees), writes its own pid and theirs, and waits.
  const run = cli.start(['run', route, '--ttl', '3s', '--grace', '10s', '--', 'sh', '-c', `sleep 311 & a=$!; sleep 312 & echo $$ $a $! > '${pidFile}'; wait`]);
  let pids: number[] = [];
  try {
    pids = await waitFor('the child to write its pid and its background jobs\'', () => readFileSync(pidFile, 'utf8').trim().split(/\s+/).map(Number), (p) => p.length === 3 && p.every((n) => n > 0), 5000);
    const [child, ...grandchildren] = pids as [number, number, number];
    assert.ok(pids.every(running));
    const held = await inspect(route);
    assert.ok(held);
    const forced = await s.call('POST', leasePath(route, 'force-release'), { request_id: rid(), reason: 'testing run stops the whole group', expected_fencing_token: held.fencing_token });
    assert.equal(forced.status, 200, forced.text);
    // run's exit, not the end of its output: a sleep left running would hold run's stdout open.
    // The feed tells run at once; failing that, its next renewal (a third of the 3 s TTL) does.
    const code = await waitFor('run to exit', () => run.child.exitCode, (c) => c !== null, 10_000);
    assert.equal(code, 4, run.stderr);
    // Well within the 10 s grace: SIGTERM alone ends them, as it reaches all of them.
    await waitFor(`the background sleeps (pids ${grandchildren.join(', ')}) to be gone`, () => grandchildren.filter(running), (alive) => alive.length === 0, 5000);
    await waitFor(`the child sh (pid ${child}) to be gone`, () => running(child), (alive) => !alive, 5000);
    assert.equal(await run.exited, 4);
  } finally {
    // Whatever happened above, leave no sleep behind: the group (if run made one) and each pid seen.
    run.child.kill('SIGKILL');
    for (const target of [-(pids[0] ?? 0), ...pids]) {
      if (target === 0) continue;
      try {
        process.kill(target, 'SIGKILL');
      } catch {
        // gone already
      }
    }
  }
});

test('a child that stops on SIGTERM within the grace is not killed, and run still exits 4', async () => {
  const route = 'lease://run/lost/polite';
  const run = cli.start(['run', route, '--grace', '10s', '--', ...node("process.on('SIGTERM', () => { console.log('stopping'); process.exit(0); }); console.log('started'); setInterval(() => {}, 1000);")]);
  await run.waitFor(/started/);
  const held = await inspect(route);
  assert.ok(held);
  const started = Date.now();
  await s.call('POST', leasePath(route, 'revoke'), { request_id: rid(), reason: 'testing run under revoke', expected_fencing_token: held.fencing_token });
  assert.equal(await run.exited, 4, run.stderr);
  assert.ok(Date.now() - started < 5000, 'did not wait for the grace');
  assert.match(run.stdout, /stopping/);
});

test('run on a held route exits 3 at once, naming the holder, and never starts the command', async () => {
  const route = 'lease://run/held/job';
  const { sessionId } = await s.openSession('other-holder', 30_000);
  const a = await s.call('POST', leasePath(route, 'acquire'), { session_id: sessionId, request_id: rid(), ttl_ms: 30_000 });
  assert.equal(a.status, 200, a.text);
  const r = await cli.run(['run', route, '--', ...node("console.log('ran')")]);
  assert.equal(r.code, 3);
  assert.equal(r.stdout, '');
  assert.match(r.stderr, /is held by other-holder \(fencing token \d+.*; --wait to queue for it \(lease_conflict, correlation id c_[\w-]+\)/);
  await s.call('POST', '/api/v1/sessions/close', { session_id: sessionId });
});

test('run --wait queues behind the holder and runs the command once the holder releases', async () => {
  const route = 'lease://run/wait/job';
  const { sessionId } = await s.openSession('first-holder', 30_000);
  const a = await s.call('POST', leasePath(route, 'acquire'), { session_id: sessionId, request_id: rid(), ttl_ms: 30_000 });
  assert.equal(a.status, 200, a.text);
  const run = cli.start(['run', route, '--wait', '20s', '--owner', 'second', '--', ...node("console.log('ran with token ' + process.env.LEASEHOLD_FENCING_TOKEN)")]);
  const deadline = Date.now() + 5000;
  while ((await inspect(route))?.waiters !== 1) {
    assert.ok(Date.now() < deadline, 'run joined the queue');
    await new Promise((r) => setTimeout(r, 50));
  }
  assert.equal(run.stdout, '', 'the command waits for the lease');
  await run.waitFor(/leasehold: lease:\/\/run\/wait\/job is held by first-holder \(fencing token \d+, expires in \d+s\); queued for it, waiting up to 20s/);
  await s.call('POST', leasePath(route, 'release'), { session_id: sessionId, request_id: rid(), lease_id: a.body.lease.lease_id, fencing_token: a.body.lease.fencing_token });
  assert.equal(await run.exited, 0, run.stderr);
  const token = Number(/ran with token (\d+)/.exec(run.stdout)?.[1]);
  assert.ok(token > a.body.lease.fencing_token, 'a newer fencing token than the first holder\'s');
  await s.call('POST', '/api/v1/sessions/close', { session_id: sessionId });
});

test('run --wait gives up with exit 3 when the holder keeps the lease past the wait', async () => {
  const route = 'lease://run/wait/timeout';
  const { sessionId } = await s.openSession('stubborn', 30_000);
  await s.call('POST', leasePath(route, 'acquire'), { session_id: sessionId, request_id: rid(), ttl_ms: 30_000 });
  const started = Date.now();
  const r = await cli.run(['run', route, '--wait', '1s', '--', ...node("console.log('ran')")]);
  assert.equal(r.code, 3);
  assert.ok(Date.now() - started >= 900, 'it waited');
  assert.match(r.stderr, /held by stubborn .* after waiting 1s/);
  await s.call('POST', '/api/v1/sessions/close', { session_id: sessionId });
});

test('run with a command that does not exist exits 127 and releases the lease', async () => {
  const route = 'lease://run/missing/job';
  const r = await cli.run(['run', route, '--', 'leasehold-no-such-command-xyz']);
  assert.equal(r.code, 127);
  assert.match(r.stderr, /could not start leasehold-no-such-command-xyz/);
  assert.equal(await inspect(route), undefined);
});

test('a release request makes run send SIGTERM to the child at once; the lease is released and run exits with the child\'s code', async () => {
  const route = 'lease://run/asked/job';
  // A long TTL: the next renewal is 10 s away, so only the live feed can tell in time.
  const run = cli.start(['run', route, '--ttl', '30s', '--', ...node("process.on('SIGTERM', () => { console.log('finishing'); process.exit(5); }); console.log('started'); setInterval(() => {}, 1000);")]);
  await run.waitFor(/started/);
  const held = await inspect(route);
  assert.ok(held);
  const asked = Date.now();
  const r = await cli.run(['request-release', route, '--reason', 'draining this host, OPS-20']);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(await run.exited, 5, run.stderr);
  assert.ok(Date.now() - asked < 5000, 'seen through the feed, well before the renewal');
  assert.match(run.stdout, /finishing/);
  assert.match(run.stderr, /release of lease:\/\/run\/asked\/job requested \(draining this host, OPS-20\); sending SIGTERM/);
  assert.equal(await inspect(route), undefined, 'released, not lost');
  await s.flushAudit(); // on PostgreSQL the other instance may still buffer the event
  const audit = await s.call('GET', `/api/v1/audit?route=${encodeURIComponent(route)}&limit=5`);
  assert.equal(audit.body.items[0].event_type, 'lease_release');
});

test('run --ignore-release-requests keeps the child running after a release request', async () => {
  const route = 'lease://run/asked/ignored';
  // The child finishes when the test closes its stdin, after run has said it ignored the request: no race with a timer.
  const child = "process.on('SIGTERM', () => { console.log('got SIGTERM'); process.exit(9); }); console.log('started'); process.stdin.resume(); process.stdin.on('end', () => { console.log('done'); process.exit(0); });";
  const run = cli.start(['run', route, '--ttl', '3s', '--ignore-release-requests', '--', ...node(child)], { keepStdin: true });
  await run.waitFor(/started/);
  const r = await cli.run(['request-release', route, '--reason', 'please let go when you can']);
  assert.equal(r.code, 0, r.stderr);
  await run.waitFor(/requested \(please let go when you can\); ignored/);
  run.child.stdin!.end();
  assert.equal(await run.exited, 0, run.stderr);
  assert.match(run.stdout, /done/);
  assert.doesNotMatch(run.stdout, /got SIGTERM/);
});

/** The `env` a shell under `run` prints, read while `run` still holds the lease, and that lease's fencing token and id. */
async function childEnvironment(route: string, args: readonly string[], env: Record<string, string | undefined> = {}): Promise<{ vars: Map<string, string>; stdout: string; held: { fencing_token: number; lease_id: string } }> {
  // `cat` keeps the command (and so the lease) alive until the test closes run's stdin.
  const run = cli.start(['run', route, ...args, '--', 'sh', '-c', 'env; echo ENV-DONE; cat > /dev/null'], { env, keepStdin: true });
  await run.waitFor(/^ENV-DONE$/m);
  const view = await inspect(route);
  // The lease id is the holder's: no API view shows it, so read it from the store.
  const row = await s.app.store.atomic((tx) => tx.getLease('default', route));
  run.child.stdin!.end();
  assert.equal(await run.exited, 0, run.stderr);
  assert.ok(view && row, 'held while the command ran');
  assert.equal(row.fencingToken, view.fencing_token);
  const held = { fencing_token: view.fencing_token, lease_id: row.leaseId };
  const vars = new Map<string, string>();
  for (const line of run.stdout.split('\n')) {
    const eq = line.indexOf('=');
    if (/^[A-Za-z_][A-Za-z0-9_]*=/.test(line)) vars.set(line.slice(0, eq), line.slice(eq + 1));
  }
  return { vars, stdout: run.stdout, held };
}

function assertLeaseVars(vars: Map<string, string>, route: string, held: { fencing_token: number; lease_id: string }): void {
  assert.equal(vars.get('LEASEHOLD_ROUTE'), route);
  assert.equal(vars.get('LEASEHOLD_FENCING_TOKEN'), String(held.fencing_token));
  assert.equal(vars.get('LEASEHOLD_LEASE_ID'), held.lease_id);
  assert.equal(vars.get('LEASEHOLD_URL'), s.url, 'the rest of run\'s environment is passed on');
}

/** A token file in the harness's folder, and the saved login `leasehold login` would write. */
function tokenFile(token: string): string {
  const file = join(cli.dir, 'run-token');
  writeFileSync(file, `${token}\n`, { mode: 0o600 });
  return file;
}

function saveLogin(token: string): () => void {
  const folder = join(cli.configHome, 'leasehold');
  mkdirSync(folder, { recursive: true, mode: 0o700 });
  writeFileSync(join(folder, 'config.json'), JSON.stringify({ url: s.url, token }), { mode: 0o600 });
  return () => rmSync(join(folder, 'config.json'), { force: true });
}

test('run keeps LEASEHOLD_TOKEN out of the command\'s environment when the token comes from it', async () => {
  const route = 'lease://run/env/no-token';
  const { vars, stdout, held } = await childEnvironment(route, []);
  assertLeaseVars(vars, route, held);
  assert.equal(vars.has('LEASEHOLD_TOKEN'), false, 'no LEASEHOLD_TOKEN');
  assert.ok(!stdout.includes(s.token), 'the token appears nowhere in the environment');
});

test('run gives the command no token when it comes from --token-file (even with LEASEHOLD_TOKEN set too) or from the saved login', async () => {
  const file = tokenFile(s.token);
  // --token-file alone: the path is an argument, the token in no variable.
  let seen = await childEnvironment('lease://run/env/file', ['--token-file', file], { LEASEHOLD_TOKEN: undefined });
  assertLeaseVars(seen.vars, 'lease://run/env/file', seen.held);
  assert.equal(seen.vars.has('LEASEHOLD_TOKEN'), false);
  assert.ok(!seen.stdout.includes(s.token));
  assert.ok(![...seen.vars.values()].includes(file), 'the token file\'s path is in no variable');
  // --token-file wins over LEASEHOLD_TOKEN, which is removed all the same.
  seen = await childEnvironment('lease://run/env/file-and-env', ['--token-file', file], { LEASEHOLD_TOKEN: 'lh_other_token_in_the_environment' });
  assertLeaseVars(seen.vars, 'lease://run/env/file-and-env', seen.held);
  assert.equal(seen.vars.has('LEASEHOLD_TOKEN'), false);
  assert.ok(!seen.stdout.includes('lh_other_token_in_the_environment') && !seen.stdout.includes(s.token));
  // The saved login: nothing in the environment either.
  const forget = saveLogin(s.token);
  try {
    const { vars, stdout, held } = await childEnvironment('lease://run/env/login', [], { LEASEHOLD_URL: undefined, LEASEHOLD_TOKEN: undefined });
    assert.equal(vars.get('LEASEHOLD_ROUTE'), 'lease://run/env/login');
    assert.equal(vars.get('LEASEHOLD_FENCING_TOKEN'), String(held.fencing_token));
    assert.equal(vars.get('LEASEHOLD_LEASE_ID'), held.lease_id);
    assert.equal(vars.has('LEASEHOLD_TOKEN'), false);
    assert.ok(!stdout.includes(s.token));
  } finally {
    forget();
  }
});

test('run --pass-token gives the command the token and server run uses, wherever it found them', async () => {
  // From LEASEHOLD_TOKEN.
  let seen = await childEnvironment('lease://run/pass/env', ['--pass-token']);
  assertLeaseVars(seen.vars, 'lease://run/pass/env', seen.held);
  assert.equal(seen.vars.get('LEASEHOLD_TOKEN'), s.token);
  // From --token-file, over a different LEASEHOLD_TOKEN: the one run used.
  seen = await childEnvironment('lease://run/pass/file', ['--pass-token', '--token-file', tokenFile(s.token)], { LEASEHOLD_TOKEN: 'lh_other_token_in_the_environment' });
  assertLeaseVars(seen.vars, 'lease://run/pass/file', seen.held);
  assert.equal(seen.vars.get('LEASEHOLD_TOKEN'), s.token);
  // From the saved login, with the server too.
  const forget = saveLogin(s.token);
  try {
    seen = await childEnvironment('lease://run/pass/login', ['--pass-token'], { LEASEHOLD_URL: undefined, LEASEHOLD_TOKEN: undefined });
    assertLeaseVars(seen.vars, 'lease://run/pass/login', seen.held);
    assert.equal(seen.vars.get('LEASEHOLD_TOKEN'), s.token);
  } finally {
    forget();
  }
});

test('run --help names the lease variables, the token left out, and --pass-token', async () => {
  const r = await cli.run(['run', '--help']);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /LEASEHOLD_LEASE_ID/);
  assert.match(r.stdout, /not LEASEHOLD_TOKEN\s+\(unless\s+--pass-token\)/);
  assert.match(r.stdout, /--pass-token/);
});
