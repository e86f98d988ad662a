/**
 * The TypeScript SDK's wire types (lib/client/types.ts) and the served
 * OpenAPI document agree: openapi-typescript turns the document into types,
 * and the compiler proves each SDK view and the document's schema for it
 * assignable both ways, so neither can gain, lose or retype a field alone.
 */

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import openapiTS, { astToString } from 'openapi-typescript';
import ts from 'typescript';
import { startTestServer, type TestServer } from '@/server/testing/harness';

let s: TestServer;
let dir: string;
before(async () => {
  s = await startTestServer();
  dir = mkdtempSync(join(tmpdir(), 'leasehold-oas-ts-'));
});
after(async () => {
  await s.close();
  rmSync(dir, { recursive: true, force: true });
});

/** SDK view ↔ the document's type for it (envelope fields omitted from answers). */
const MUTUAL: [sdk: string, doc: string][] = [
  ['LeaseView', "S['LeaseView']"],
  ['HeldLease', "S['HeldLease']"],
  ['SessionView', "S['SessionView']"],
  ['CheckpointWritten', "S['CheckpointWritten']"],
  ['Checkpoint', "S['Checkpoint']"],
  ['TokenInfo', "S['TokenInfo']"],
  ['AuditEvent', "S['AuditEvent']"],
  ['LeasePage', "Answer<'ListLeasesResponse'>"],
  ['SessionPage', "Answer<'ListSessionsResponse'>"],
  ['AuditPage', "Answer<'ListAuditEventsResponse'>"],
  ['Whoami', "Answer<'WhoamiResponse'>"],
  ['CreatedToken', "Answer<'CreateTokenResponse'>"],
  ['CreatedEmbedToken', "Answer<'CreateEmbedTokenResponse'>"],
  ['MetricsSummary', "Answer<'GetMetricsSummaryResponse'>"],
  ['ChangeKind', "S['FeedChange']['change']"],
  ['Policy', "S['Policy']"],
  ['EffectivePolicy', "Answer<'ExplainPolicyResponse'>"],
];

/** One way only, with the reason: the SDK's `Health` is one interface for both health answers, so it is wider. */
const DOC_TO_SDK: [sdk: string, doc: string][] = [['SDK.Health', "S['Health'] | S['HealthUnavailable']"]];

const qualify = (t: string) => (/^[A-Z]\w*$/.test(t) ? `SDK.${t}` : t);

function agreementSource(typesPath: string): string {
  const lines = [
    `import type { components } from './openapi';`,
    `import type * as SDK from ${JSON.stringify(typesPath)};`,
    `type S = components['schemas'];`,
    `type Answer<K extends keyof S> = Omit<S[K], 'status' | 'code' | 'correlation_id'>;`,
    '/** The SDK marks views readonly; the check is about fields and their types. */',
    'type W<T> = T extends readonly [infer A, infer B] ? [W<A>, W<B>] : T extends readonly (infer U)[] ? W<U>[] : T extends object ? { -readonly [K in keyof T]: W<T[K]> } : T;',
  ];
  MUTUAL.forEach(([sdk, doc], i) => {
    lines.push(`export const sdkToDoc${i}: ${doc} = {} as W<${qualify(sdk)}>; // ${sdk}`);
    lines.push(`export const docToSdk${i}: W<${qualify(sdk)}> = {} as ${doc}; // ${sdk}`);
  });
  DOC_TO_SDK.forEach(([sdk, doc], i) => lines.push(`export const oneWay${i}: ${sdk} = {} as ${doc};`));
  // The check itself can fail: a view that lost a field does not agree.
  lines.push('// @ts-expect-error a drifted view is refused', "export const drifted: S['LeaseView'] = {} as Omit<W<SDK.LeaseView>, 'fencing_token'>;");
  return `${lines.join('\n')}\n`;
}

test('openapi-typescript types of the served document and the SDK’s wire types are assignable both ways', async () => {
  const served = await s.call('GET', '/api/v1/openapi.json', undefined, { token: null });
  assert.equal(served.status, 200);
  const generated = astToString(await openapiTS(served.body));
  assert.match(generated, /LeaseView: \{/);
  writeFileSync(join(dir, 'openapi.ts'), generated);
  const entry = join(dir, 'agreement.ts');
  writeFileSync(entry, agreementSource(resolve('lib/client/types.ts')));

  const program = ts.createProgram([entry], {
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.ESNext,
    moduleResolution: ts.ModuleResolutionKind.Bundler,
    types: [],
  });
  const problems = ts.getPreEmitDiagnostics(program).map((d) => {
    const where = d.file && d.start !== undefined ? `${d.file.fileName.split('/').pop()}:${d.file.getLineAndCharacterOfPosition(d.start).line + 1} ` : '';
    return `${where}${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`;
  });
  assert.deepEqual(problems, []);
});
