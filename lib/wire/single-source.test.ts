/**
 * The wire vocabulary is declared once, in lib/wire: this test fails when a
 * second list of change kinds appears in the source (an array, a set or a
 * union literal naming two or more of them). server/http/wire.test.ts holds
 * the answer schemas to lib/wire's views.
 */

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { CHANGE_KINDS } from './index';

const root = join(import.meta.dirname, '..', '..');

/** Source files (tests, end-to-end specs and generated documents aside). */
function sources(): string[] {
  const files = execFileSync('git', ['ls-files', '-co', '--exclude-standard', '--', '*.ts', '*.tsx', '*.mts', '*.mjs', '*.js'], { cwd: root, encoding: 'utf8' })
    .split('\n')
    .filter((f) => f !== '');
  return files.filter((f) => !/\.test\.tsx?$/.test(f) && !f.startsWith('lib/wire/') && !f.startsWith('e2e/') && !f.startsWith('tests/') && !f.startsWith('dist/') && !f.startsWith('.next/'));
}

const KINDS: ReadonlySet<string> = new Set(CHANGE_KINDS);

/** The change kinds quoted in a piece of source. */
function kindsIn(text: string): Set<string> {
  const found = new Set<string>();
  for (const m of text.matchAll(/(['"`])([a-z_]+)\1/g)) if (KINDS.has(m[2]!)) found.add(m[2]!);
  return found;
}

/**
 * A subset the compiler holds to the vocabulary is not a second list: one
 * typed by it on the same line (`new Set<ChangeKind>([…])`,
 * `Extract<ChangeKind, 'revoked' | …>`, `[…] satisfies readonly EndingKind[]`).
 */
function checked(text: string, at: number, length: number): boolean {
  const lineStart = text.lastIndexOf('\n', at) + 1;
  const lineEnd = text.indexOf('\n', at + length);
  const line = text.slice(lineStart, lineEnd === -1 ? undefined : lineEnd);
  return /\b(ChangeKind|EndingKind)\b/.test(line);
}

/** Array (and Set) literals, and union types of string literals, each naming two or more change kinds, not typed by the vocabulary. */
function secondLists(text: string): string[] {
  const hits: string[] = [];
  const patterns = [/\[[^[\]]*\]/g, /(['"])[a-z_]+\1(?:\s*\|\s*(['"])[a-z_]+\2)+/g];
  for (const re of patterns) {
    for (const m of text.matchAll(re)) if (kindsIn(m[0]).size >= 2 && !checked(text, m.index, m[0].length)) hits.push(m[0]);
  }
  return hits;
}

test('the scan finds a list of change kinds written out (arrays, sets, unions)', () => {
  assert.equal(secondLists(`const A = ['released', 'expired'];`).length, 1);
  assert.equal(secondLists(`const S = new Set(["revoked", "rolled_back"]);`).length, 1);
  assert.equal(secondLists(`type T = 'acquired' | 'released' | 'held';`).length, 1);
  assert.equal(secondLists(`type T = 'session_closed' | 'session_expired';`).length, 0);
  assert.equal(secondLists(`case 'released':\n case 'expired':`).length, 0);
  assert.equal(secondLists(`const C = new Set<ChangeKind>(['released', 'rolled_back']);`).length, 0, 'a subset typed by the vocabulary');
  assert.equal(secondLists(`kind: Extract<ChangeKind, 'force_released' | 'revoked'>;`).length, 0, 'a subset typed by the vocabulary');
});

test('no source file outside lib/wire lists the change kinds again', () => {
  const found: string[] = [];
  for (const f of sources()) {
    let text: string;
    try {
      text = readFileSync(join(root, f), 'utf8');
    } catch {
      continue; // listed but deleted in the work tree
    }
    for (const hit of secondLists(text)) found.push(`${f}: ${hit.replace(/\s+/g, ' ').slice(0, 160)}`);
  }
  assert.deepEqual(
    found,
    [],
    'import CHANGE_KINDS, ENDING_KINDS or ChangeKind from lib/wire instead',
  );
});
