import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { z } from 'zod';
import { apiMarkdown, openApi30Json, openApiJson, packageVersion } from '../../scripts/openapi';
import { leasePath, rid, startTestServer, type Reply, type TestServer } from '../testing/harness';
import { SseClient } from '../testing/sse';
import { Answers, ErrorBody, FeedEvents, HealthOk, type Operation } from './answers';
import { STATUS_OF } from './envelope';
import { schemaConverter } from './openapi-30';
import { ROUTES } from './routes';

const run = promisify(execFile);

let s: TestServer;
let served: Record<string, unknown>;
let served30: Record<string, any>;
before(async () => {
  s = await startTestServer({ version: packageVersion() });
  const r = await s.call('GET', '/api/v1/openapi.json', undefined, { token: null });
  assert.equal(r.status, 200);
  served = r.body;
  const r30 = await s.call('GET', '/api/v1/openapi-3.0.json', undefined, { token: null });
  assert.equal(r30.status, 200);
  served30 = r30.body;
});
after(async () => {
  await s.close();
});

test('the served documents are docs/openapi.json and docs/openapi-3.0.json, and docs/api.md is what scripts/openapi.ts makes of them (run `npm run build:openapi`)', () => {
  assert.equal(readFileSync('docs/openapi.json', 'utf8'), openApiJson(served));
  assert.equal(readFileSync('docs/openapi-3.0.json', 'utf8'), openApi30Json(served30));
  assert.equal(readFileSync('docs/api.md', 'utf8'), apiMarkdown(served));
});

/** `redocly lint` with the recommended rules (less `skip`): its problems, as `rule: message` lines. */
async function lint(doc: object, skip: string[] = []): Promise<string[]> {
  const dir = mkdtempSync(join(tmpdir(), 'leasehold-lint-'));
  try {
    const file = join(dir, 'openapi.json');
    writeFileSync(file, JSON.stringify(doc));
    // Exit code 1 means errors; the JSON report (stdout) says which, so read it either way. No telemetry, no update check.
    const env = { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' };
    const args = ['lint', file, '--extends', 'recommended', '--format', 'json', ...skip.flatMap((rule) => ['--skip-rule', rule])];
    const out = await run('node_modules/.bin/redocly', args, { env }).catch((e: { stdout?: string }) => ({ stdout: e.stdout ?? '' }));
    const report = JSON.parse(out.stdout) as { totals: { errors: number; warnings: number }; problems: { ruleId: string; message: string }[] };
    const problems = report.problems.map((p) => `${p.ruleId}: ${p.message}`);
    if (problems.length === 0) assert.deepEqual(report.totals, { ...report.totals, errors: 0, warnings: 0 });
    return problems;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

test('redocly lint with the recommended rules finds no error and no warning in the served document', async () => {
  assert.deepEqual(await lint(served), []);
});

test('redocly lint validates the 3.0.3 document as OpenAPI 3.0 with no error and no warning (examples aside: metadata values are real, its `type: object` stand-in is not)', async () => {
  assert.equal(served30.openapi, '3.0.3');
  assert.deepEqual(await lint(served30, ['no-invalid-media-type-examples']), []);
});

/** Every schema object of an OpenAPI document (components, parameters, headers, bodies), and subschemas, with where it is. */
function* schemasOf(doc: Record<string, any>): Generator<[string, unknown]> {
  function* walk(s: unknown, at: string): Generator<[string, unknown]> {
    yield [at, s];
    if (typeof s !== 'object' || s === null) return;
    const o = s as Record<string, any>;
    for (const [name, p] of Object.entries((o.properties ?? {}) as Record<string, unknown>)) yield* walk(p, `${at}/properties/${name}`);
    for (const k of ['items', 'additionalProperties', 'not']) if (k in o && typeof o[k] === 'object') yield* walk(o[k], `${at}/${k}`);
    for (const k of ['allOf', 'anyOf', 'oneOf', 'prefixItems']) for (const [i, x] of ((o[k] ?? []) as unknown[]).entries()) yield* walk(x, `${at}/${k}/${i}`);
  }
  for (const [name, x] of Object.entries(doc.components.schemas as object)) yield* walk(x, `#/components/schemas/${name}`);
  for (const [name, h] of Object.entries(doc.components.headers as Record<string, any>)) yield* walk(h.schema, `#/components/headers/${name}`);
  for (const [path, item] of Object.entries(doc.paths as Record<string, Record<string, any>>)) {
    for (const [method, op] of Object.entries(item)) {
      for (const p of op.parameters ?? []) yield* walk(p.schema, `${method} ${path} ${p.name}`);
      for (const [status, r] of Object.entries({ body: op.requestBody ?? {}, ...op.responses } as Record<string, any>)) {
        for (const [type, m] of Object.entries((r.content ?? {}) as Record<string, any>)) yield* walk(m.schema, `${method} ${path} ${status} ${type}`);
      }
    }
  }
}

const SCHEMA_KEYWORDS_30 = new Set([
  'title', 'multipleOf', 'maximum', 'exclusiveMaximum', 'minimum', 'exclusiveMinimum', 'maxLength', 'minLength', 'pattern', 'maxItems', 'minItems',
  'uniqueItems', 'maxProperties', 'minProperties', 'required', 'enum', 'type', 'allOf', 'oneOf', 'anyOf', 'not', 'items', 'properties',
  'additionalProperties', 'description', 'format', 'default', 'nullable', 'discriminator', 'readOnly', 'writeOnly', 'xml', 'externalDocs', 'example', 'deprecated', '$ref',
]);

test('the 3.0.3 document has no 3.1 construct: no type arrays, const, prefixItems, propertyNames or boolean schemas, no siblings beside $ref, no typeless schema', () => {
  assert.equal(served30.info.summary, undefined);
  assert.equal(served30.info.license.identifier, undefined);
  assert.equal(typeof served30.info.license.url, 'string');
  let n = 0;
  for (const [at, s] of schemasOf(served30)) {
    n++;
    assert.ok(typeof s === 'object' && s !== null && !Array.isArray(s), `${at} is a schema object`);
    const o = s as Record<string, unknown>;
    for (const k of Object.keys(o)) assert.ok(SCHEMA_KEYWORDS_30.has(k), `${at}: \`${k}\` is not an OpenAPI 3.0 keyword`);
    if ('$ref' in o) assert.deepEqual(Object.keys(o), ['$ref'], `${at}: 3.0 ignores a reference's siblings`);
    else assert.ok(typeof o.type === 'string' || o.allOf || o.anyOf || o.oneOf, `${at} has one type (a typeless schema is an undeclared type in generated Go)`);
    if (o.nullable) assert.equal(typeof o.type, 'string', `${at}: nullable beside its type`);
    if (typeof o.additionalProperties === 'boolean') assert.equal(o.additionalProperties, false, `${at}`);
  }
  assert.ok(n > 500, `${n} schemas walked`);
  // Every reference resolves, and the 3.0 document describes the same calls.
  for (const ref of new Set(JSON.stringify(served30).match(/"\$ref":"[^"]*"/g) ?? [])) {
    const m = /^"\$ref":"#\/components\/(schemas|headers)\/([^"]+)"$/.exec(ref);
    assert.ok(m && served30.components[m[1]!]?.[m[2]!], `${ref} resolves`);
  }
  const ops = (doc: Record<string, any>) => Object.entries(doc.paths as Record<string, object>).flatMap(([p, item]) => Object.entries(item).map(([m, op]) => `${m} ${p} ${op.operationId}`));
  assert.deepEqual(ops(served30), ops(served));
});

test('the 3.0 rewrite says each 3.1 construct the 3.0 way, and refuses one it cannot say', () => {
  const convert = schemaConverter({ Policy: { type: 'object', properties: { a: { type: 'string' } } }, JsonValue: { description: 'Any JSON value' } });
  assert.deepEqual(convert({ type: ['integer', 'null'], format: 'int64' }, 'x'), { type: 'integer', format: 'int64', nullable: true });
  assert.deepEqual(convert({ anyOf: [{ $ref: '#/components/schemas/Policy' }, { type: 'null' }] }, 'x'), {
    type: 'object',
    allOf: [{ $ref: '#/components/schemas/Policy' }],
    nullable: true,
  });
  assert.deepEqual(convert({ type: 'string', const: 'success' }, 'x'), { type: 'string', enum: ['success'] });
  assert.deepEqual(convert({ type: 'array', prefixItems: [{ type: 'number' }, { type: 'number' }], items: false, minItems: 2, maxItems: 2 }, 'x'), {
    type: 'array',
    items: { type: 'number' },
    minItems: 2,
    maxItems: 2,
  });
  assert.deepEqual(convert({ type: 'number', exclusiveMinimum: 0, examples: [1.5] }, 'x'), { type: 'number', minimum: 0, exclusiveMinimum: true, example: 1.5 });
  assert.deepEqual(convert({ type: 'object', propertyNames: { type: 'string' }, additionalProperties: { type: ['string', 'number', 'boolean'] } }, 'x').additionalProperties, {
    type: 'object',
    description: 'The value is a string, number or boolean: `type: object` only because OpenAPI 3.0 has no any-type that generators read (the 3.1 document says it exactly)',
  });
  assert.equal(convert({ $ref: '#/components/schemas/JsonValue' }, 'x').type, 'object', 'a reference to any value is written in place');
  assert.throws(() => convert({ type: 'object', patternProperties: { '^a': { type: 'string' } } }, 'x'), /`patternProperties`, which 3.0 does not have/);
  assert.throws(() => convert({ type: 'array', prefixItems: [{ type: 'string' }], items: { type: 'number' } }, 'x'), /tuple with more items/);
});

test('fencing tokens, revisions and every integer that may pass 2^31 are int64 in both documents; numbers are double', () => {
  for (const [name, doc] of [['3.1', served], ['3.0', served30]] as const) {
    const seen = new Set<string>();
    for (const [at, s] of schemasOf(doc)) {
      const o = s as Record<string, any>;
      const type = Array.isArray(o.type) ? o.type.filter((t: string) => t !== 'null')[0] : o.type;
      const field = /\/properties\/([^/]+)$/.exec(at)?.[1];
      if (field && /fencing_token|revision/.test(field)) {
        assert.equal(type, 'integer', `${name} ${at}`);
        seen.add(field);
      }
      if (type === 'integer' && (o.maximum ?? Infinity) > 2 ** 31 - 1 && !at.startsWith('#/components/headers/')) assert.equal(o.format, 'int64', `${name} ${at}`);
      if (type === 'number') assert.equal(o.format, 'double', `${name} ${at}`);
    }
    assert.deepEqual([...seen].sort(), ['expected_fencing_token', 'fencing_token', 'revision'], `${name}: tokens and revisions were found`);
  }
  assert.equal(served30.components.schemas.HeldLease.properties.fencing_token.format, 'int64');
  assert.equal(served30.components.schemas.HeldLease.properties.revision.format, 'int64');
  assert.equal(served30.components.schemas.FeedChange.properties.revision.format, 'int64');
  assert.equal(served30.components.schemas.ReleaseLeaseRequest.properties.fencing_token.format, 'int64');
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
  conforms('lease_summary', await s.call('GET', `/api/v1/leases/summary?selector=${encodeURIComponent('lease://oas/**')}&with_waiters=false`));
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

  // A session's batched calls (docs/design.md "Batched calls"), and the all-or-nothing refusal's `held`.
  const batch = await s.call('POST', '/api/v1/sessions/acquire', { session_id: sid, request_id: rid(), leases: [{ route: 'lease://oas/answers/b1' }, { route: 'lease://oas/answers/b2', metadata: { shard: 3 } }] });
  conforms('session_acquire', batch);
  const [b1, b2] = batch.body.leases as Array<{ route: string; lease_id: string; fencing_token: number }>;
  conformsError(await s.call('POST', '/api/v1/sessions/acquire', { session_id: sid, request_id: rid(), leases: [{ route: 'lease://oas/answers/b3' }, { route: b1!.route }] }), 'lease_conflict');
  const renewItems = [
    { route: b1!.route, lease_id: b1!.lease_id, fencing_token: b1!.fencing_token },
    { route: b2!.route, lease_id: 'ls_wrong', fencing_token: b2!.fencing_token, ttl_ms: 20_000 },
  ];
  conforms('session_renew', await s.call('POST', '/api/v1/sessions/renew', { session_id: sid, request_id: rid(), leases: renewItems }));

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
  conforms('lock_delay_list', await s.call('GET', `/api/v1/lock-delays?selector=${encodeURIComponent('lease://oasp/**')}`));
  conforms('policy_delete', await s.call('DELETE', `/api/v1/policies?selector=${encodeURIComponent(sel)}&reason=${encodeURIComponent(reason)}`));

  assert.deepEqual([...seen].sort(), ROUTES.map((d) => d.operation).sort(), 'every operation of the route table was checked');
});
