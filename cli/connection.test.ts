import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { configPath, deleteConfig, readConfig, resolveConnection, writeConfig, type Env } from './connection';
import { CliError } from './errors';

const dir = mkdtempSync(join(tmpdir(), 'leasehold-conn-'));
after(() => rmSync(dir, { recursive: true, force: true }));
const env = (extra: Record<string, string> = {}): Env => ({ XDG_CONFIG_HOME: dir, ...extra });

test('the saved login lives under XDG_CONFIG_HOME with mode 0600, and logout deletes it', () => {
  const file = writeConfig({ url: 'http://saved:1', token: 'lh_saved' }, env());
  assert.equal(file, configPath(env()));
  assert.equal(file, join(dir, 'leasehold', 'config.json'));
  assert.equal(statSync(file).mode & 0o777, 0o600);
  assert.deepEqual(readConfig(env()), { url: 'http://saved:1', token: 'lh_saved' });
  assert.equal(deleteConfig(env()), true);
  assert.equal(deleteConfig(env()), false);
  assert.deepEqual(readConfig(env()), {});
});

test('flags beat the environment, which beats the saved login', () => {
  writeConfig({ url: 'http://saved:1', token: 'lh_saved' }, env());
  assert.deepEqual(resolveConnection({}, env()), { url: 'http://saved:1', token: 'lh_saved' });
  assert.deepEqual(resolveConnection({}, env({ LEASEHOLD_URL: 'http://env:2', LEASEHOLD_TOKEN: 'lh_env' })), { url: 'http://env:2', token: 'lh_env' });
  const tokenFile = join(dir, 'token');
  writeFileSync(tokenFile, 'lh_file\n');
  assert.deepEqual(resolveConnection({ url: 'http://flag:3', tokenFile }, env({ LEASEHOLD_URL: 'http://env:2', LEASEHOLD_TOKEN: 'lh_env' })), { url: 'http://flag:3', token: 'lh_file' });
  deleteConfig(env());
});

test('no server anywhere is a usage error (exit 2) that says how to give one', () => {
  assert.throws(
    () => resolveConnection({}, env()),
    (e) => e instanceof CliError && e.exitCode === 2 && /pass --url, set LEASEHOLD_URL, or run `leasehold login/.test(e.message),
  );
});

test('an empty or missing token file is a usage error', () => {
  const empty = join(dir, 'empty');
  writeFileSync(empty, '\n');
  assert.throws(() => resolveConnection({ url: 'http://x:1', tokenFile: empty }, env()), (e) => e instanceof CliError && e.exitCode === 2);
  assert.throws(() => resolveConnection({ url: 'http://x:1', tokenFile: join(dir, 'missing') }, env()), (e) => e instanceof CliError && e.exitCode === 2);
});

test('a saved file that is not JSON is reported, not ignored', () => {
  writeConfig({ url: 'http://x:1', token: 't' }, env());
  writeFileSync(configPath(env()), '{not json');
  assert.throws(() => readConfig(env()), /is not valid JSON/);
  deleteConfig(env());
});
