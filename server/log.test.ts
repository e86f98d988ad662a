/**
 * The two log formats, through the real logger and through the real server
 * process: JSON lines for a pipeline, readable lines for a terminal.
 */

import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { createLog, defaultLogFormat } from './log';
import { errorFields } from './engine/core/logger';
import { call, tempDir } from './testing/harness';
import { killServers, spawnServer, stopServer } from './testing/process';

const dirs: string[] = [];
after(() => {
  killServers();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function capture(format: 'json' | 'pretty', level: 'debug' | 'info' = 'info') {
  const out: string[] = [];
  const log = createLog({ format, level, instance: 'i_fmt', colorize: false, destination: { write: (l: string) => out.push(l) } });
  return { ...log, out };
}

test('a JSON line has time (ISO), level (by name), instance and message, then its fields', () => {
  const { logger, out } = capture('json');
  logger.info('request', { correlation_id: 'c_abc', status: 200 });
  assert.equal(out.length, 1);
  assert.ok(out[0]!.endsWith('\n') && !out[0]!.slice(0, -1).includes('\n'), 'one line');
  const line = JSON.parse(out[0]!);
  assert.deepEqual(Object.keys(line).sort(), ['correlation_id', 'instance', 'level', 'message', 'status', 'time']);
  assert.deepEqual([line.level, line.instance, line.message, line.correlation_id, line.status], ['info', 'i_fmt', 'request', 'c_abc', 200]);
  assert.match(line.time, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
});

test('the level filters: below it nothing is written, and enabled() says so', () => {
  const { logger, out } = capture('json', 'info');
  logger.debug('hidden');
  assert.equal(logger.enabled('debug'), false);
  assert.equal(logger.enabled('warn'), true);
  logger.warn('shown');
  assert.deepEqual(out.map((l) => JSON.parse(l).message), ['shown']);
});

test('a pretty line is readable: time, level name and message first, then the fields, with a stack on lines of its own', () => {
  const { logger, out } = capture('pretty');
  logger.info('request', { correlation_id: 'c_abc', status: 200 });
  logger.error('unexpected error', { correlation_id: 'c_def', error: errorFields(new Error('boom')) });
  assert.match(out[0]!, /^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}\] INFO: request \{.*"instance":"i_fmt".*"correlation_id":"c_abc".*"status":200.*\}\n$/);
  assert.match(out[1]!, /^\[[^\]]+\] ERROR: unexpected error \{.*"correlation_id":"c_def".*\}\n/);
  assert.match(out[1]!, /\n\s+Error: boom\n\s+at /, 'the stack is readable');
  assert.equal(out.join('').includes('"level"'), false);
});

test('the default format is pretty on a terminal and JSON otherwise', () => {
  assert.equal(defaultLogFormat(true), 'pretty');
  assert.equal(defaultLogFormat(false), 'json');
  assert.equal(defaultLogFormat(undefined), 'json');
});

test('the server process logs JSON lines when stdout is not a terminal, and readable lines with LEASEHOLD_LOG_FORMAT=pretty', async () => {
  for (const format of ['', 'pretty'] as const) {
    const d = tempDir('leasehold-logfmt-');
    dirs.push(d);
    // A chosen bootstrap token: a generated one is shown once as a banner of
    // its own on the first start (server/main.test.ts), which is not a log line.
    const s = await spawnServer({ LEASEHOLD_DATA_DIR: d, LEASEHOLD_LOG_FORMAT: format, LEASEHOLD_ACCESS_LOG: 'on', LEASEHOLD_BOOTSTRAP_TOKEN: `lh_logfmt_${format || 'json'}_bootstrap_token_0123456789` });
    const r = await call(s.url, 'GET', '/api/v1/health/live');
    assert.equal(r.status, 200);
    assert.equal(await stopServer(s.proc), 0);
    const lines = s.output().split('\n').filter(Boolean);
    const request = lines.find((l) => l.includes(r.headers['x-correlation-id'] as string));
    assert.ok(request, s.output());
    if (format === '') {
      for (const l of lines) {
        const j = JSON.parse(l);
        assert.ok(j.time && j.level && j.instance && j.message, l);
      }
      assert.deepEqual([JSON.parse(request).operation, JSON.parse(request).status], ['health_live', 200]);
    } else {
      assert.equal(lines.some((l) => l.startsWith('{')), false, s.output());
      assert.ok(lines.some((l) => / INFO: listening on http:\/\//.test(l)), s.output());
      assert.match(request, / INFO: request \{.*"operation":"health_live".*"status":200/);
    }
  }
});
