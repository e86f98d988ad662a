import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from './harness';
import { scanForSecrets } from './log-capture';

test('the secrets scan passes over the first-start banner only, and still finds the same token anywhere else', () => {
  const dir = tempDir('leasehold-scan-');
  try {
    mkdirSync(dir, { recursive: true });
    const token = 'lh_generated_token_abcdefghijklmnopqrstuvwxyz';
    writeFileSync(join(dir, 'secrets-1.txt'), `${token}\n`);
    const banner = `\n  bootstrap admin token (shown once, also in /tmp/x/admin-token):\n\n  ${token}\n\n`;
    writeFileSync(join(dir, 'proc-1.log'), `{"level":"warn","message":"bootstrap admin token created"}\n${banner}{"level":"info","message":"listening"}\n`);
    assert.deepEqual(scanForSecrets(dir).leaks, []);
    writeFileSync(join(dir, 'proc-2.log'), `${banner}{"level":"info","message":"whoami","token":"${token}"}\n`);
    assert.deepEqual(scanForSecrets(dir).leaks, [{ file: 'proc-2.log', secret: token }]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
