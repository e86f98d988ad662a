/**
 * The repository stands alone: no code, comment or doc sends a reader to
 * specification files that live outside it. Its own reference is in docs/
 * (semantics.md, sdk.md, cli.md, console.md, operations.md, design.md).
 */

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { ROOT } from '../../server/testing/process';

// Spelled in pieces so that this file does not match itself.
const OUTSIDE = ['CONTRACT', 'HTTP', 'SDK', 'CONSOLE'].map((name) => `${name}.md`).concat(['..' + '/shared']);

test('no source file, comment or doc refers to specification files outside the repository', () => {
  const files = execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard', '*.ts', '*.tsx', '*.md', '*.mjs'], { cwd: ROOT, encoding: 'utf8' })
    .split('\n')
    .filter((f) => f !== '' && !f.startsWith('node_modules/'));
  assert.ok(files.length > 50, `found ${files.length} files`);
  const hits: string[] = [];
  for (const file of files) {
    let text: string;
    try {
      text = readFileSync(join(ROOT, file), 'utf8');
    } catch {
      continue; // listed but deleted in the work tree
    }
    text.split('\n').forEach((line, i) => {
      if (OUTSIDE.some((ref) => line.includes(ref))) hits.push(`${file}:${i + 1}: ${line.trim()}`);
    });
  }
  assert.deepEqual(hits, [], `point these at the repository's own docs (docs/semantics.md, docs/sdk.md, docs/console.md):\n${hits.join('\n')}`);
});
