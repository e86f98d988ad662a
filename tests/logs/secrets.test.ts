/**
 * No secret in the server log. Every server the tests start writes its full
 * log (debug level, every request line) into LEASEHOLD_TEST_LOG_DIR, and the
 * test harness notes every secret the tests send or are handed: bearer
 * tokens, created tokens' secrets, session ids, cookie values
 * (server/testing/log-capture.ts). scripts/test-unit.sh sets the directory
 * for the whole run and runs this file last, so the scan covers the logs of
 * the full run; run alone, it scans what its own workload below logged.
 */

import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { call, leasePath, rid, startTestServer, type TestServer } from '../../server/testing/harness';
import { flushCapture, scanForSecrets, testLogDir } from '../../server/testing/log-capture';
import { killServers, spawnServer, stopServer } from '../../server/testing/process';
import { SseClient } from '../../server/testing/sse';
import type { Store } from '../../server/store/types';

const own: string[] = [];
if (!testLogDir()) {
  const d = mkdtempSync(join(tmpdir(), 'leasehold-logs-'));
  own.push(d);
  process.env.LEASEHOLD_TEST_LOG_DIR = d;
}
after(() => {
  killServers();
  for (const d of own) rmSync(d, { recursive: true, force: true });
});

/** Touch every family of the API with real credentials, including a failing step, a login cookie and a stream. */
async function workload(s: TestServer, fault: { on: boolean }, marker: string): Promise<void> {
  const ok = (r: { status: number; text: string }, status = 200) => assert.equal(r.status, status, r.text);
  const { sessionId } = await s.openSession('secrets-a');
  const route = 'lease://acme/secrets/r';
  const acquired = await s.call('POST', leasePath(route, 'acquire'), { session_id: sessionId, request_id: rid(), metadata: { note: marker } });
  ok(acquired);
  const lease = { lease_id: acquired.body.lease.lease_id, fencing_token: acquired.body.lease.fencing_token };
  ok(await s.call('POST', leasePath(route, 'renew'), { session_id: sessionId, request_id: rid(), ...lease }));
  ok(await s.call('PUT', leasePath(route, 'checkpoint'), { session_id: sessionId, request_id: rid(), ...lease, value: { marker } }));
  ok(await s.call('GET', leasePath(route)));
  ok(await s.call('POST', leasePath(route, 'release'), { session_id: sessionId, request_id: rid(), ...lease }));
  ok(await s.call('POST', '/api/v1/sessions/keepalive', { session_id: sessionId }));
  const writer = await s.createToken(['lease://acme/**#write'], { name: 'secrets-writer' });
  const other = (await s.openSession('secrets-b', 15_000, writer)).sessionId;
  const held = await s.call('POST', leasePath(`${route}2`, 'acquire'), { session_id: other, request_id: rid() }, { token: writer });
  ok(held);
  ok(await s.call('POST', leasePath(`${route}2`, 'force-release'), { request_id: rid(), reason: 'the secrets scan frees it', expected_fencing_token: held.body.lease.fencing_token }));
  ok(await s.call('POST', '/api/v1/embed-tokens', { selector: 'lease://acme/**' }), 201);
  const login = await s.call('POST', '/api/v1/auth/login', { token: writer }, { token: null });
  ok(login);
  const cookie = String(login.headers['set-cookie']).split(';')[0]!;
  ok(await s.call('GET', '/api/v1/auth/whoami', undefined, { token: null, headers: { Cookie: cookie } }));
  ok(await s.call('POST', '/api/v1/auth/logout', {}, { token: null, headers: { Cookie: cookie, Origin: s.url } }));
  ok(await s.call('GET', '/api/v1/auth/whoami', undefined, { token: 'lh_a_wrong_token_guessed_by_someone_000' }), 401);
  ok(await s.call('POST', '/api/v1/sessions', { owner_id: 'x', ttl_ms: 1 }), 400);
  ok(await s.call('GET', '/api/v1/tokens'));
  ok(await s.call('GET', '/api/v1/audit'));
  ok(await s.call('GET', '/api/metrics'));
  const stream = await SseClient.open(s.url, '/api/v1/inventory/stream?selector=lease://acme/**', { token: writer });
  await stream.waitFor((e) => e.event === 'subscribed');
  stream.close();
  fault.on = true;
  const failed = await s.call('POST', '/api/v1/sessions/close', { session_id: other }, { token: writer });
  fault.on = false;
  assert.equal(failed.status, 500, 'an unexpected error logs its stack');
  ok(await s.call('POST', '/api/v1/sessions/close', { session_id: other }, { token: writer }));
}

test('no token, session id or cookie value is in any server log of the run (and the scan finds one that is)', async () => {
  const dir = testLogDir()!;
  const marker = `body-marker-${Math.random().toString(36).slice(2)}`;
  const fault = { on: false };
  const s = await startTestServer({
    wrapStore: (inner) =>
      Object.assign(Object.create(inner) as Store, {
        atomic: (fn: Parameters<Store['atomic']>[0], scope: Parameters<Store['atomic']>[1]) =>
          fault.on ? Promise.reject(new Error('injected: a bug')) : inner.atomic(fn, scope),
      }),
  });
  try {
    await workload(s, fault, marker);
  } finally {
    await s.close();
  }
  // And the process as users start it, with its own startup lines.
  const token = `lh_scan_${Math.random().toString(36).slice(2)}_bootstrap`;
  const p = await spawnServer({ LEASEHOLD_DATA_DIR: own[0] ?? dir, LEASEHOLD_BOOTSTRAP_TOKEN: token });
  assert.equal((await call(p.url, 'POST', '/api/v1/sessions', { owner_id: 'p' }, { token })).status, 201);
  assert.equal(await stopServer(p.proc), 0);
  flushCapture();

  const scan = scanForSecrets(dir);
  assert.deepEqual(scan.leaks, [], `secrets in ${dir}`);
  assert.ok(scan.secrets >= 6, `secrets noted: ${scan.secrets}`);
  assert.ok(scan.lines >= 25, `log lines scanned: ${scan.lines}`);
  const logs = readdirSync(dir).filter((n) => n.endsWith('.log'));
  assert.ok(logs.some((n) => n.startsWith('http-')) && logs.some((n) => n.startsWith('proc-')), 'the in-process servers’ log and the process’s output');
  for (const n of logs) assert.equal(readFileSync(join(dir, n), 'utf8').includes(marker), false, `a request body is in ${n}`);
  process.stdout.write(`# scanned ${scan.files} log files, ${scan.lines} lines, ${scan.bytes} bytes for ${scan.secrets} secrets\n`);

  // The scan itself can fail: a noted secret written into a log is found.
  const control = mkdtempSync(join(tmpdir(), 'leasehold-logs-control-'));
  own.push(control);
  writeFileSync(join(control, 'secrets-1.txt'), `${token}\n`);
  writeFileSync(join(control, 'leaky.log'), `{"message":"request","authorization":"Bearer ${token}"}\n`);
  assert.deepEqual(scanForSecrets(control).leaks, [{ file: 'leaky.log', secret: token }]);
});
