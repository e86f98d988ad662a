/**
 * Request lines through a real server and the real logger (pino, JSON):
 * which requests are logged, with which fields, and that a correlation id
 * from an answer leads to exactly one line.
 */

import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { leasePath, rid, startTestServer, type TestServer } from '../testing/harness';
import { createLog } from '../log';
import { StoreUnavailableError, type Store } from '../store/types';
import { AccessLog } from './access-log';
import { TIME_FACTOR, waitFor } from '../testing/wait';
import type { LogFields, Logger } from '../engine/core/logger';

type Line = Record<string, any>;

/** The real logger, writing JSON lines into memory. */
function memoryLog(level: 'debug' | 'info' = 'debug') {
  const lines: Line[] = [];
  const { logger } = createLog({ format: 'json', level, instance: 'i_test', destination: { write: (l: string) => lines.push(JSON.parse(l)) } });
  return { logger, lines, withCid: (cid: string) => lines.filter((l) => JSON.stringify(l).includes(cid)) };
}

/** A store whose steps throw `fault()` while it is set. */
function faulty(inner: Store, state: { fault?: () => Error; delayMs?: number }): Store {
  return Object.assign(Object.create(inner) as Store, {
    atomic: async (fn: Parameters<Store['atomic']>[0], scope: Parameters<Store['atomic']>[1]) => {
      if (state.delayMs) await new Promise((r) => setTimeout(r, state.delayMs));
      if (state.fault) throw state.fault();
      return inner.atomic(fn, scope);
    },
  });
}

const servers: TestServer[] = [];
after(async () => {
  for (const s of servers) await s.close();
});

async function server(opts: { all?: boolean; slowMs?: number; level?: 'debug' | 'info' } = {}) {
  const log = memoryLog(opts.level);
  const state: { fault?: () => Error; delayMs?: number } = {};
  const s = await startTestServer({ logger: log.logger, accessLog: { all: opts.all, slowMs: opts.slowMs }, wrapStore: (inner) => faulty(inner, state) });
  servers.push(s);
  return { s, log, state };
}

test('an unexpected error: its correlation id is in exactly one line, with the request fields and the stack', async () => {
  const { s, log, state } = await server();
  const session = await s.openSession('w');
  state.fault = () => new Error('injected: a bug in a step');
  const r = await s.call('POST', leasePath('lease://acme/logs/bug', 'acquire'), { session_id: session.sessionId, request_id: rid() });
  state.fault = undefined;
  assert.deepEqual([r.status, r.body.code, r.body.message], [500, 'internal_error', 'internal error']);
  const cid = r.headers['x-correlation-id'] as string;
  assert.equal(r.body.correlation_id, cid);
  const lines = log.withCid(cid);
  assert.equal(lines.length, 1, JSON.stringify(log.lines));
  const [line] = lines as [Line];
  assert.equal(line.level, 'error');
  assert.equal(line.message, 'unexpected error');
  assert.equal(line.instance, 'i_test');
  assert.ok(!Number.isNaN(Date.parse(line.time)));
  assert.deepEqual(
    [line.correlation_id, line.method, line.operation, line.family, line.route, line.status, line.code],
    [cid, 'POST', 'lease_acquire', 'default', 'lease://acme/logs/bug', 500, 'internal_error'],
  );
  assert.equal(typeof line.latency_ms, 'number');
  assert.equal(line.error.message, 'injected: a bug in a step');
  assert.match(line.error.stack, /injected: a bug in a step\n\s+at /);
  assert.equal(r.text.includes('injected'), false, 'the client never sees internals');
});

test('a store outage (503) is logged without the access log; a refusal (4xx) only with it', async () => {
  const { s, log, state } = await server({ all: false });
  const session = await s.openSession('w');
  state.fault = () => new StoreUnavailableError('injected: the store is down', false);
  const down = await s.call('GET', leasePath('lease://acme/logs/down'));
  state.fault = undefined;
  assert.deepEqual([down.status, down.body.code], [503, 'backend_unavailable']);
  const refused = await s.call('POST', leasePath('lease://acme/logs/x', 'release'), { session_id: session.sessionId, request_id: rid(), lease_id: 'ls_nope', fencing_token: 1 });
  assert.ok(refused.status >= 400 && refused.status < 500, refused.text);
  const ok = await s.call('GET', '/api/v1/auth/whoami');
  assert.equal(ok.status, 200);

  const [line, ...more] = log.withCid(down.body.correlation_id);
  assert.equal(more.length, 0);
  assert.deepEqual([line?.level, line?.message, line?.status, line?.code, line?.operation], ['error', 'request failed', 503, 'backend_unavailable', 'lease_inspect']);
  assert.equal(line?.error, undefined, 'an expected failure has no stack');
  assert.equal(log.withCid(refused.body.correlation_id).length, 0);
  assert.equal(log.withCid(ok.body.correlation_id).length, 0);
});

test('with the access log on, every request has one info line with its outcome', async () => {
  const { s, log } = await server({ all: true });
  const session = await s.openSession('w');
  const route = 'lease://acme/logs/every';
  const a = await s.call('POST', leasePath(route, 'acquire'), { session_id: session.sessionId, request_id: rid() });
  const conflict = await s.call('POST', leasePath(route, 'acquire'), { session_id: (await s.openSession('v')).sessionId, request_id: rid() });
  const unknown = await s.call('GET', '/api/v1/nothing-here');
  const anonymous = await s.call('GET', leasePath(route), undefined, { token: 'lh_not_a_real_token_at_all_000000' });
  const cases: Array<[string, unknown[]]> = [
    [a.body.correlation_id, ['info', 'request', 'POST', 'lease_acquire', 'default', route, 200, 'lease_acquired']],
    [conflict.body.correlation_id, ['info', 'request', 'POST', 'lease_acquire', 'default', route, 409, 'lease_conflict']],
    [unknown.body.correlation_id, ['info', 'request', 'GET', null, null, null, 404, 'not_found']],
    [anonymous.body.correlation_id, ['info', 'request', 'GET', 'lease_inspect', null, null, 401, 'invalid_credential']],
  ];
  for (const [cid, want] of cases) {
    const lines = log.withCid(cid);
    assert.equal(lines.length, 1, cid);
    const l = lines[0]!;
    assert.deepEqual([l.level, l.message, l.method, l.operation, l.family, l.route, l.status, l.code], want);
  }
});

test('a waiting acquire whose client leaves is one line: status 499, client_closed', async () => {
  const { s, log } = await server({ all: true });
  const a = await s.openSession('a');
  const b = await s.openSession('b');
  const route = 'lease://acme/logs/leaver';
  assert.equal((await s.call('POST', leasePath(route, 'acquire'), { session_id: a.sessionId, request_id: rid() })).status, 200);
  const ac = new AbortController();
  const waiting = s.call('POST', leasePath(route, 'acquire'), { session_id: b.sessionId, request_id: rid(), wait_ms: 30_000 }, { signal: ac.signal }).catch(() => 'aborted');
  await waitFor('the second acquire to wait', async () => (await s.call('GET', leasePath(route))).body.lease?.waiters, (n) => n === 1);
  ac.abort();
  assert.equal(await waiting, 'aborted');
  const line = await waitFor('a client_closed request line', () => log.lines.find((l) => l.code === 'client_closed'));
  assert.deepEqual([line?.level, line?.operation, line?.route, line?.status], ['info', 'lease_acquire', route, 499]);
  assert.equal(log.withCid(line!.correlation_id).length, 1);
});

test('a slow request is a warn line without the access log; a waiting acquire is never slow', async () => {
  // A threshold no plain request reaches on a loaded machine (CI, two instances), and a delay past it.
  const slowMs = 400 * TIME_FACTOR;
  const { s, log, state } = await server({ all: false, slowMs });
  const a = await s.openSession('a');
  const b = await s.openSession('b');
  const route = 'lease://acme/logs/slow';
  const held = await s.call('POST', leasePath(route, 'acquire'), { session_id: a.sessionId, request_id: rid() });
  assert.equal(held.status, 200);
  const waited = await s.call('POST', leasePath(route, 'acquire'), { session_id: b.sessionId, request_id: rid(), wait_ms: slowMs + 200 });
  assert.equal(waited.body.code, 'lease_conflict', 'the wait ran out');
  state.delayMs = slowMs + 50;
  const slow = await s.call('GET', leasePath(route));
  state.delayMs = 0;
  assert.equal(slow.status, 200);
  const [line, ...more] = log.withCid(slow.body.correlation_id);
  assert.equal(more.length, 0);
  assert.deepEqual([line?.level, line?.message, line?.slow, line?.code], ['warn', 'slow request', true, 'lease_inspected']);
  assert.ok(line!.latency_ms >= slowMs, String(line!.latency_ms));
  assert.deepEqual(log.withCid(waited.body.correlation_id), [], `waiting ${slowMs + 200} ms on purpose is not slow`);
  assert.deepEqual(log.withCid(held.body.correlation_id), [], `a plain acquire is not slow (threshold ${slowMs} ms)`);
});

test('LEASEHOLD_LOG_LEVEL=warn keeps request lines out even with the access log on, errors in', async () => {
  const lines: Line[] = [];
  const { logger } = createLog({ format: 'json', level: 'warn', instance: 'i', destination: { write: (l: string) => lines.push(JSON.parse(l)) } });
  const access = new AccessLog({ logger, all: true });
  const entry = { correlationId: 'c_1', method: 'GET', operation: 'lease_get', family: 'default', route: 'lease://a/b/c', status: 200, code: 'lease', latencyMs: 1, waits: false };
  access.record(entry);
  access.record({ ...entry, correlationId: 'c_2', status: 503, code: 'backend_unavailable' });
  assert.deepEqual(
    lines.map((l) => [l.level, l.correlation_id]),
    [['error', 'c_2']],
  );
});

/** A logger that keeps what it is given, for the budget's counting. */
function keeping(): Logger & { lines: Array<{ level: string; message: string; fields: LogFields }> } {
  const lines: Array<{ level: string; message: string; fields: LogFields }> = [];
  const at = (level: string) => (message: string, fields: LogFields = {}) => void lines.push({ level, message, fields });
  return { lines, debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error'), enabled: () => true };
}

test('a flood of failures is rate-limited per kind, and the lines left out are counted and reported', () => {
  const logger = keeping();
  const access = new AccessLog({ logger, burst: 3, windowMs: 60_000 });
  const entry = { method: 'GET', operation: 'lease_get', family: 'default', route: '', status: 503, code: 'backend_unavailable', latencyMs: 1, waits: false };
  for (let i = 0; i < 10; i++) access.record({ ...entry, correlationId: `c_${i}` });
  access.record({ ...entry, correlationId: 'c_bug', status: 500, code: 'internal_error', error: new Error('bug') });
  assert.deepEqual(
    logger.lines.map((l) => l.fields.correlation_id),
    ['c_0', 'c_1', 'c_2', 'c_bug'],
    'another kind has its own budget',
  );
  assert.deepEqual(access.suppressed, { backend_unavailable: 7 });
  access.close();
  const report = logger.lines.at(-1)!;
  assert.deepEqual([report.level, report.message, report.fields.kind, report.fields.suppressed], ['warn', 'log lines suppressed', 'backend_unavailable', 7]);
});
