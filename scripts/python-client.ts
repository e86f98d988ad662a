/**
 * Generates a Python client from the OpenAPI 3.0.3 document with Swagger
 * Codegen (scripts/swagger-codegen.ts; it needs `java`). Usage:
 *
 *   npm run client:python -- [out-dir] [openapi-3.0.json]
 *
 * (defaults: `generated/python`, docs/openapi-3.0.json, which a running
 * server also serves at /api/v1/openapi-3.0.json). One generator limit is
 * worked around: its Python models refuse `None` for a required property
 * even when it is nullable, so nullable properties are listed as optional
 * for it (the server always sends them). docs/api.md shows the result in use.
 */

import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { swaggerCodegen } from './swagger-codegen';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');

type Schema = { properties?: Record<string, { nullable?: boolean }>; required?: string[] };

/** The 3.0 document as Swagger Codegen's Python generator reads it (see above). */
export function forPythonCodegen(doc30: object): object {
  const doc = structuredClone(doc30) as { components: { schemas: Record<string, Schema> } };
  for (const schema of Object.values(doc.components.schemas)) {
    if (schema.required && schema.properties) schema.required = schema.required.filter((p) => schema.properties![p]?.nullable !== true);
  }
  return doc;
}

/** Write the `leasehold_client` package of the 3.0 document `doc30` under `outDir`. */
export async function generatePythonClient(doc30: object, outDir: string): Promise<void> {
  await swaggerCodegen(forPythonCodegen(doc30), 'python', outDir, { packageName: 'leasehold_client' });
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const out = resolve(process.argv[2] ?? join(root, 'generated', 'python'));
  const doc = JSON.parse(readFileSync(process.argv[3] ?? join(root, 'docs', 'openapi-3.0.json'), 'utf8')) as object;
  await generatePythonClient(doc, out);
  console.log(`leasehold_client written under ${out}`);
}
