/**
 * Doc examples as data: the fenced code blocks of README.md and docs/*.md,
 * with where they come from, so tests can compile and run exactly what a
 * reader copies. Also builds the SDK package the examples import.
 */

import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { PREBUILT, ROOT } from '../../server/testing/process';

export interface DocBlock {
  /** `README.md` or `docs/x.md`. */
  readonly file: string;
  /** 1-based line of the opening fence. */
  readonly line: number;
  readonly lang: string;
  readonly code: string;
  /** A block whose first line says `a complete program` runs as it is against a real server. */
  readonly runnable: boolean;
}

/** The Markdown files whose examples are checked: README.md and every docs/*.md. */
export function docFiles(): string[] {
  return ['README.md', ...readdirSync(join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).sort().map((f) => `docs/${f}`)];
}

/** Every fenced block in `file` with one of `langs` (```ts, ```tsx, …). */
export function docBlocks(file: string, langs: readonly string[] = ['ts', 'tsx', 'typescript']): DocBlock[] {
  return blocksOf(readFileSync(join(ROOT, file), 'utf8'), file, langs);
}

/** Every fenced block with one of `langs` in Markdown `text` (say where it came from in `file`): a README read out of a tarball, say. */
export function blocksOf(text: string, file: string, langs: readonly string[] = ['ts', 'tsx', 'typescript']): DocBlock[] {
  const lines = text.split('\n');
  const blocks: DocBlock[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^(\s*)(`{3,}|~{3,})\s*([\w+-]*)/.exec(lines[i]!);
    if (!open) continue;
    const [, indent, fence, lang] = open;
    const body: string[] = [];
    let j = i + 1;
    while (j < lines.length && !lines[j]!.trimStart().startsWith(fence!)) body.push(lines[j++]!.slice(indent!.length));
    if (langs.includes(lang!.toLowerCase())) {
      const code = body.join('\n');
      blocks.push({ file, line: i + 1, lang: lang!.toLowerCase(), code, runnable: /^\/\/.*\ba complete program\b/i.test(body[0] ?? '') });
    }
    i = j;
  }
  return blocks;
}

let built = false;
/** Builds dist/sdk (the package the examples import) once per test process. */
export function buildSdk(): string {
  // After `npm run build` (scripts/test.sh) dist/sdk is fresh: passes running side by side must not rebuild it under each other.
  if (!built && !PREBUILT) {
    const r = spawnSync(process.execPath, [join(ROOT, 'scripts', 'build-sdk.mjs')], { cwd: ROOT, encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`build-sdk failed:\n${r.stdout}\n${r.stderr}`);
    built = true;
  }
  return join(ROOT, 'dist', 'sdk');
}

/** The TypeScript compiler of this repository, as a command line. */
export const TSC = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');

/**
 * Runs the real `tsc --init` in `dir` and makes only the change its own
 * comment advises for Node (`"types": ["node"]`), plus `target` if given.
 * Returns the tsconfig text.
 */
export function tscInit(dir: string, target?: string): string {
  const r = spawnSync(process.execPath, [TSC, '--init'], { cwd: dir, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`tsc --init failed: ${r.stdout}${r.stderr}`);
  const file = join(dir, 'tsconfig.json');
  let text = readFileSync(file, 'utf8');
  const edits: [RegExp, string][] = [[/"types": \[\],/, '"types": ["node"],']];
  if (target !== undefined) edits.push([/"target": "esnext",/, `"target": "${target}",`]);
  for (const [pattern, replacement] of edits) {
    if (!pattern.test(text)) throw new Error(`tsc --init wrote a tsconfig without ${pattern}:\n${text}`);
    text = text.replace(pattern, replacement);
  }
  for (const setting of ['"module": "nodenext"', '"strict": true', '"exactOptionalPropertyTypes": true']) {
    if (!text.includes(setting)) throw new Error(`tsc --init no longer sets ${setting}`);
  }
  writeFileSync(file, text);
  return text;
}
