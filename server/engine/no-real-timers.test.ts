/**
 * Engine and store tests run on the injected clock and scheduler
 * (server/engine/core/scheduler.ts, server/testing/engine-fixture.ts): they move
 * time instead of waiting for it. This guard fails when one of them uses a
 * real timer, sleeps, or reads the wall clock to wait. Waiting for the store
 * is `until(f, ready)` (store turns); waiting for time is `f.clock.advance`.
 */

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { basename, join, relative } from 'node:path';
import { ROOT } from '../testing/process';

const FORBIDDEN: Array<[RegExp, string]> = [
  [/\bsetTimeout\s*\(/, 'setTimeout'],
  [/\bsetInterval\s*\(/, 'setInterval'],
  [/node:timers\/promises/, 'node:timers/promises'],
  [/\bsleep\s*\(/, 'sleep()'],
  [/\bDate\.now\s*\(\s*\)/, 'Date.now()'],
];

function testFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    if (e.isDirectory()) return testFiles(p);
    return e.name.endsWith('.test.ts') && e.name !== basename(import.meta.filename) ? [p] : [];
  });
}

/** The source without comments (a comment may mention what the code must not do). */
function code(text: string): string {
  return text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:'"`])\/\/.*$/gm, '$1');
}

test('no engine or store test waits for real time', () => {
  const files = [...testFiles(join(ROOT, 'server', 'engine')), ...testFiles(join(ROOT, 'server', 'store'))];
  assert.ok(files.length > 10, `found only ${files.length} test files`);
  const found: string[] = [];
  for (const f of files) {
    const lines = code(readFileSync(f, 'utf8')).split('\n');
    lines.forEach((line, i) => {
      for (const [re, what] of FORBIDDEN) if (re.test(line)) found.push(`${relative(ROOT, f)}:${i + 1}: ${what}`);
    });
  }
  assert.deepEqual(found, [], 'use the manual clock (f.clock.advance) and store turns (until) instead');
});

test('the guard sees a real timer', () => {
  const src = code("it('x', async () => { await new Promise((r) => setTimeout(r, 5)); }); // setInterval( in a comment");
  assert.deepEqual(FORBIDDEN.filter(([re]) => re.test(src)).map(([, w]) => w), ['setTimeout']);
});
