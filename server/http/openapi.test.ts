import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { z } from 'zod';
import { apiMarkdown, openApiJson, packageVersion } from '../../scripts/openapi';
import { leasePath, rid, startTestServer, type Reply, type TestServer } from '../testing/harness';
import { SseClient } from '../testing/sse';
import { Answers, ErrorBody, FeedEvents, HealthOk, type Operation } from './answers';
import { STATUS_OF } from './envelope';
import { ROUTES } from './routes';

const run = promisify(execFile);

let s: TestServer;
let served: Record<string, unknown>;
before(async () => {
  s = await startTestServer({ version: packageVersion() });
  const r = await s.call('GET', '/api/v1/openapi.json', undefined, { token: null });
  assert.equal(r.status, 200);
  served = r.body;
});
after(async () => {
  await s.close();
});

test('the served document is docs/openapi.json, and docs/api.md is what scripts/openapi.ts makes of it (run `npm run build:openapi`)', () => {
  assert.equal(readFileSync('docs/openapi.json', 'utf8'), openApiJson(served));
  assert.equal(readFileSync('docs/api.md', 'utf8'), apiMarkdown(served));
});

test('redocly lint with the recommended rules finds no error and no warning in the served document', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'leasehold-lint-'));
  try {
    const file = join(dir, 'openapi.json');
    writeFileSync(file, JSON.stringify(served));
    // Exit code 1 means errors; the JSON report (stdout) says which, so read it either way. No telemetry, no update check.
    const env = { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' };
    const lint = await run('node_modules/.bin/redocly', ['lint', file, '--extends', 'recommended', '--format', 'json'], { env }).catch(
      (e: { stdout?: string }) => ({ stdout: e.stdout ?? '' }),
    );
    const report = JSON.parse(lint.stdout) as { totals: { errors: number; warnings: number }; problems: { ruleId: string; message: string }[] };
    assert.deepEqual(
      report.problems.map((p) => `${p.ruleId}: ${p.message}`),
      [],
    );
    assert.deepEqual(report.totals, { ...report.totals, errors: 0, warnings: 0 });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('every reference in the served document resolves to a component', () => {
  const refs = JSON.stringify(served).match(/"\$ref":"[^"]*"/g) ?? [];
  assert.ok(refs.length > 50);
  const components = served.components as Record<string, Record<string, unknown>>;
  for (const ref of new Set(refs)) {
    const m = /^"\$ref":"#\/components\/(schemas|headers)\/([^"]+)"$/.exec(ref);
    assert.ok(m && components[m[1]!]?.[m[2]!], `${ref} resolves`);
  }
});

/** Parse an answer with its operation's schema; the parse drops fields the schema lacks, so equality means none were sent. */
function conforms(op: Operation, r: Reply): void {
  const def = ROUTES.find((d) => d.operation === op)!;
  assert.equal(r.status, def.success.status, `${op}: ${r.text}`);
  const schema = z.object({ status: z.literal('success'), code: z.literal(def.success.code), correlation_id: z.string(), ...Answers[op].shape });
  const parsed = schema.safeParse(r.body);
  assert.ok(parsed.success, `${op} answers as documented: ${parsed.error?.message}`);
  assert.deepEqual(parsed.data, r.body, `${op} sends no undocumented field`);
  seen.add(op);
}
const seen = new Set<Operation>();

function conformsError(r: Reply, code: string): void {
  assert.equal(r.status, STATUS_OF[code as keyof typeof STATUS_OF]);
  const parsed = ErrorBody.safeParse(r.body);
  assert.ok(parsed.success, parsed.error?.message);
  assert.deepEqual(parsed.data, r.body, 'no undocumented error field');
  assert.equal(r.body.code, code);
}

test('every success answer parses with its operation’s schema and carries no field the schema lacks; errors parse with the error schema', async () => {
  const route = 'lease://oas/answers/r1';
  const health = await s.call('GET', '/api/v1/health', undefined, { token: null });
  assert.deepEqual(HealthOk.parse(health.body), health.body);

  const opened = await s.call('POST', '/api/v1/sessions', { owner_id: 'oas', ttl_ms: 15_000 });
  conforms('session_open', opened);
  const sid = opened.body.session.session_id as string;
  conforms('session_keepalive', await s.call('POST', '/api/v1/sessions/keepalive', { session_id: sid }));
  conforms('session_list', await s.call('GET', '/api/v1/sessions?limit=5'));

  // The stream runs to the end: its events are checked too, and revoking its token closes it.
  const created = await s.call('POST', '/api/v1/tokens', { name: 'oas', grants: ['lease://oas/**#read'] });
  conforms('token_create', created);
  const streamToken = created.body.token as string;
  const stream = await SseClient.open(s.url, `/api/v1/inventory/stream?selector=${encodeURIComponent('lease://oas/**')}&renewals=1`, { token: streamToken });
  const hello = await stream.waitFor((e) => e.event === 'hello');
  seen.add('feed_open');
  const streamId = hello.data.stream_id as string;

  const acquired = await s.call('POST', leasePath(route, 'acquire'), { session_id: sid, request_id: rid(), ttl_ms: 30_000, metadata: { shard: 3 } });
  conforms('lease_acquire', acquired);
  const sub = await s.call('POST', `/api/v1/inventory/streams/${streamId}/subscriptions`, { selector: 'lease://oas/answers/*' }, { token: streamToken });
  conforms('feed_subscribe', sub);
  conforms('feed_unsubscribe', await s.call('DELETE', `/api/v1/inventory/streams/${streamId}/subscriptions/${sub.body.subscription_id as string}`, undefined, { token: streamToken }));
  const held = await s.call('GET', leasePath(route));
  conforms('lease_inspect', held);
  const proof = { session_id: sid, lease_id: '', fencing_token: held.body.lease.fencing_token as number };
  const acquiredAgain = await s.call('POST', leasePath(route, 'acquire'), { session_id: sid, request_id: rid() });
  conformsError(acquiredAgain, 'lease_conflict');
  // A renew presenting another lease id is refused.
  conformsError(await s.call('POST', leasePath(route, 'renew'), { ...proof, lease_id: 'ls_wrong', request_id: rid() }), 'lease_lost');
  conforms('lease_list', await s.call('GET', `/api/v1/leases?selector=${encodeURIComponent('lease://oas/**')}&limit=10`));
  conforms('audit_list', await s.call('GET', '/api/v1/audit?limit=5'));
  conforms('whoami', await s.call('GET', '/api/v1/auth/whoami'));
  conforms('metrics_summary', await s.call('GET', '/api/v1/metrics/summary?window_s=5'));
  conformsError(await s.call('GET', leasePath('lease://oas/answers/none', 'checkpoint')), 'checkpoint_not_found');
  conformsError(await s.call('GET', '/api/v1/auth/whoami', undefined, { token: 'lh_nope' }), 'invalid_credential');
  conformsError(await s.call('POST', '/api/v1/sessions', { owner_id: 'oas', bogus: 1 }), 'invalid_request');

  conforms('token_list', await s.call('GET', '/api/v1/tokens'));
  conforms('embed_token_create', await s.call('POST', '/api/v1/embed-tokens', { selector: 'lease://oas/**', ttl_ms: 60_000 }));
  conforms('login', await s.call('POST', '/api/v1/auth/login', { token: s.token }, { token: null }));
  conforms('logout', await s.call('POST', '/api/v1/auth/logout', undefined, { token: null }));

  // The holder's own calls, with the lease id from a fresh acquire on a second route.
  const r2 = 'lease://oas/answers/r2';
  const a2 = await s.call('POST', leasePath(r2, 'acquire'), { session_id: sid, request_id: rid() });
  const p2 = { session_id: sid, lease_id: a2.body.lease.lease_id as string, fencing_token: a2.body.lease.fencing_token as number };
  conforms('lease_release_request', await s.call('POST', leasePath(r2, 'release-request'), { request_id: rid(), reason: 'please let go of r2 now', expected_fencing_token: p2.fencing_token }));
  conforms('lease_renew', await s.call('POST', leasePath(r2, 'renew'), { ...p2, request_id: rid(), ttl_ms: 20_000 }));
  conforms('checkpoint_write', await s.call('PUT', leasePath(r2, 'checkpoint'), { ...p2, request_id: rid(), value: { nested: [1, 'two', null, { three: true }] } }));
  conforms('checkpoint_read', await s.call('GET', leasePath(r2, 'checkpoint')));
  conforms('lease_release', await s.call('POST', leasePath(r2, 'release'), { ...p2, request_id: rid() }));

  const reason = 'stuck worker, paged at night';
  conforms('lease_force_release', await s.call('POST', leasePath(route, 'force-release'), { request_id: rid(), reason, expected_fencing_token: proof.fencing_token }));
  const a3 = await s.call('POST', leasePath(route, 'acquire'), { session_id: sid, request_id: rid() });
  conformsError(await s.call('POST', leasePath(route, 'revoke'), { request_id: rid(), reason, expected_fencing_token: 1 }), 'lease_mismatch');
  conforms('lease_revoke', await s.call('POST', leasePath(route, 'revoke'), { request_id: rid(), reason, expected_fencing_token: a3.body.lease.fencing_token, close_session: false }));
  conforms('session_close', await s.call('POST', '/api/v1/sessions/close', { session_id: sid }));

  conforms('token_revoke', await s.call('DELETE', `/api/v1/tokens/${created.body.token_id as string}`));
  await stream.waitFor((e) => e.event === 'closed');
  await stream.done;
  for (const e of stream.events) {
    const schema = FeedEvents[e.event as keyof typeof FeedEvents];
    assert.ok(schema, `event ${e.event} is documented`);
    assert.deepEqual(schema.parse(e.data), e.data, `${e.event} sends no undocumented field`);
    if (e.event === 'change') assert.equal(e.id, String(e.data.revision), 'a change’s id is its revision');
  }
  // overflow needs a consumer slower than the server (server/http/feed-slow.test.ts makes one); it is not produced here.
  assert.deepEqual([...new Set(stream.events.map((e) => e.event))].sort(), ['change', 'closed', 'hello', 'release_requested', 'renewed', 'subscribed']);

  // Policies, and the lock-delay fields of an error body.
  const sel = 'lease://oasp/**';
  conforms('policy_set', await s.call('PUT', '/api/v1/policies', { selector: sel, reason, lock_delay_ms: 30_000, ttl_max_ms: 60_000 }));
  conforms('policy_list', await s.call('GET', `/api/v1/policies?selector=${encodeURIComponent('lease://**')}`));
  conforms('policy_effective', await s.call('GET', '/api/v1/policies/effective/oasp/a/b'));
  conforms('policy_effective', await s.call('GET', '/api/v1/policies/effective/other/a/b'));
  const ps = (await s.call('POST', '/api/v1/sessions', { owner_id: 'oasp', ttl_ms: 15_000 })).body.session.session_id as string;
  const pa = await s.call('POST', leasePath('lease://oasp/a/b', 'acquire'), { session_id: ps, request_id: rid() });
  await s.call('POST', leasePath('lease://oasp/a/b', 'force-release'), { request_id: rid(), reason, expected_fencing_token: pa.body.lease.fencing_token });
  conformsError(await s.call('POST', leasePath('lease://oasp/a/b', 'acquire'), { session_id: ps, request_id: rid() }), 'lease_conflict');
  conformsError(await s.call('GET', leasePath('lease://oasp/a/b')), 'lease_not_found');
  conforms('policy_delete', await s.call('DELETE', `/api/v1/policies?selector=${encodeURIComponent(sel)}&reason=${encodeURIComponent(reason)}`));

  assert.deepEqual([...seen].sort(), ROUTES.map((d) => d.operation).sort(), 'every operation of the route table was checked');
});
