/**
 * No import cycle in server/ (docs/design.md "Engine map"): every static
 * import of server/**\/*.ts (`import`, `import type`, `export … from`) is an
 * edge of a graph that must have no cycle, so each folder can be read, and
 * tested, from the bottom up. A failure names one cycle, file by file.
 */

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

const ROOT = resolve(import.meta.dirname, '..');

export type Graph = ReadonlyMap<string, readonly string[]>;

/** The module specifiers a source file imports statically (comments stripped; dynamic `import()` is not an edge). */
export function specifiers(source: string): string[] {
  const code = source.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:'"`])\/\/.*$/gm, '$1');
  const out: string[] = [];
  const re = /(?:^|[;\s])(?:import|export)\s+(?:type\s+)?(?:[\w*{}\s,$]+?\s+from\s+)?['"]([^'"]+)['"]/g;
  for (let m = re.exec(code); m; m = re.exec(code)) out.push(m[1]!);
  return out;
}

/** A specifier as a file of the repository, or undefined (a package, or a file outside it). */
function resolveSpecifier(from: string, spec: string): string | undefined {
  let base: string;
  if (spec.startsWith('@/')) base = join(ROOT, spec.slice(2));
  else if (spec.startsWith('.')) base = resolve(dirname(from), spec);
  else return undefined;
  for (const candidate of [base, `${base}.ts`, `${base}.tsx`, join(base, 'index.ts')]) {
    if (existsSync(candidate) && statSync(candidate).isFile()) return candidate;
  }
  return undefined;
}

function sourceFiles(dir: string): string[] {
  const out: string[] = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) out.push(...sourceFiles(p));
    else if (e.name.endsWith('.ts')) out.push(p);
  }
  return out;
}

/** The import graph of the .ts files under `dir`, by path relative to the repository; edges only to files under `dir`. */
export function importGraph(dir: string): Graph {
  const files = sourceFiles(dir);
  const inside = new Set(files);
  const graph = new Map<string, string[]>();
  for (const f of files) {
    const to = new Set<string>();
    for (const spec of specifiers(readFileSync(f, 'utf8'))) {
      const target = resolveSpecifier(f, spec);
      if (target !== undefined && inside.has(target)) to.add(relative(ROOT, target));
    }
    graph.set(relative(ROOT, f), [...to].sort());
  }
  return graph;
}

/** One cycle of the graph (its files in import order, the first repeated at the end), or undefined. */
export function findCycle(graph: Graph): string[] | undefined {
  const state = new Map<string, 'open' | 'done'>();
  const path: string[] = [];
  const visit = (node: string): string[] | undefined => {
    state.set(node, 'open');
    path.push(node);
    for (const next of graph.get(node) ?? []) {
      const s = state.get(next);
      if (s === 'open') return [...path.slice(path.indexOf(next)), next];
      if (s === undefined) {
        const found = visit(next);
        if (found) return found;
      }
    }
    path.pop();
    state.set(node, 'done');
    return undefined;
  };
  for (const node of [...graph.keys()].sort()) {
    if (state.get(node) !== undefined) continue;
    const found = visit(node);
    if (found) return found;
  }
  return undefined;
}

test('the checker reads every static import form and finds a planted cycle', () => {
  assert.deepEqual(
    specifiers(
      [
        "import { a } from './a';",
        "import type { B } from '../b';",
        "export { c } from './c';",
        "export type { D } from '@/server/d';",
        "import './side-effect';",
        "import * as e from './e';",
        '// import { nope } from "./comment";',
        "const later = await import('./dynamic');",
      ].join('\n'),
    ),
    ['./a', '../b', './c', '@/server/d', './side-effect', './e'],
  );
  const planted: Graph = new Map([
    ['core/model.ts', []],
    ['leases/leases.ts', ['core/model.ts', 'waiters/waiters.ts']],
    ['waiters/waiters.ts', ['core/step.ts']],
    ['core/step.ts', ['core/model.ts', 'leases/leases.ts']],
  ]);
  assert.deepEqual(findCycle(planted), ['core/step.ts', 'leases/leases.ts', 'waiters/waiters.ts', 'core/step.ts']);
  assert.equal(findCycle(new Map([...planted, ['core/step.ts', ['core/model.ts']]])), undefined);
});

test('server/ has no import cycle', () => {
  const graph = importGraph(join(ROOT, 'server'));
  assert.ok(graph.size > 100, `the graph holds server/'s files (${graph.size})`);
  const cycle = findCycle(graph);
  assert.equal(cycle, undefined, `import cycle: ${cycle?.join(' → ')}`);
});
