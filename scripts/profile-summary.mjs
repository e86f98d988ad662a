/**
 * Summarise a .cpuprofile (scripts/profile-server.mjs) as text: the
 * functions by self time and by inclusive time (each function counted once
 * per sample however often it recurs on the stack), and, with `--callers
 * NAME`, the call chains (three frames up) under which NAME spent its own time.
 *
 *   node scripts/profile-summary.mjs server-123.cpuprofile [--top 40] [--callers run]
 */

import { readFileSync } from 'node:fs';

const args = process.argv.slice(2);
const file = args.find((a) => !a.startsWith('--') && !/^\d+$/.test(a) && args[args.indexOf(a) - 1] !== '--callers');
if (!file) {
  console.error('usage: node scripts/profile-summary.mjs FILE.cpuprofile [--top N] [--callers NAME]');
  process.exit(2);
}
const opt = (name) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
};
const top = Number(opt('--top') ?? 40);
const callersOf = opt('--callers');

const profile = JSON.parse(readFileSync(file, 'utf8'));
const nodes = new Map(profile.nodes.map((n) => [n.id, n]));
const parent = new Map();
for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
const hits = new Map();
for (const id of profile.samples) hits.set(id, (hits.get(id) ?? 0) + 1);
const total = profile.samples.length;
const label = (n) => `${n.callFrame.functionName || '(anonymous)'} ${n.callFrame.url.split('/').pop()}:${n.callFrame.lineNumber + 1}`;
const add = (m, k, v) => m.set(k, (m.get(k) ?? 0) + v);
const pct = (v) => `${((100 * v) / total).toFixed(1).padStart(5)} %`;
const print = (title, m) => {
  console.log(`-- ${title}`);
  for (const [k, v] of [...m].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`${pct(v)}  ${k}`);
};

const self = new Map();
const inclusive = new Map();
const callers = new Map();
for (const [id, count] of hits) {
  const n = nodes.get(id);
  add(self, label(n), count);
  const seen = new Set();
  for (let x = id; x !== undefined; x = parent.get(x)) {
    const l = label(nodes.get(x));
    if (!seen.has(l)) add(inclusive, l, count);
    seen.add(l);
  }
  if (callersOf !== undefined && (n.callFrame.functionName || '(anonymous)') === callersOf) {
    const chain = [];
    for (let x = parent.get(id); x !== undefined && chain.length < 3; x = parent.get(x)) chain.push(label(nodes.get(x)));
    add(callers, chain.join(' < '), count);
  }
}
console.log(`${total} samples (${((profile.endTime - profile.startTime) / 1e6).toFixed(1)} s)`);
print('self time', self);
print('inclusive time', inclusive);
if (callersOf !== undefined) print(`where ${callersOf} spent its own time`, callers);
