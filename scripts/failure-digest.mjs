#!/usr/bin/env node
// The failures of a test run, short enough to sit at the end of a CI log
// (docs/design.md "Flake hunting"): CI keeps only the log's tail, so
// scripts/test.sh prints this digest just above its totals line.
//
//   node scripts/failure-digest.mjs <label>=<file> …
//
// Each file is node's TAP output of a unit pass (scripts/test-unit.sh keeps
// one per pass) or a Playwright JSON report. For every failing test (not the
// suites above it) it prints the pass, the test's path of names, where it
// failed, and the first lines of the failure: the harness's waitFor and
// until() messages say what the test waited for and what it saw last.
// Prints nothing when nothing failed; a missing or unreadable file is named.
import { readFileSync } from 'node:fs';
import { relative } from 'node:path';

const MAX_FAILURES = 12;
const MAX_LINES = 8;
const MAX_LINE_CHARS = 240;

const ansi = /\u001b\[[0-9;]*m/g;
const clip = (line) => (line.length > MAX_LINE_CHARS ? `${line.slice(0, MAX_LINE_CHARS)}…` : line);
const here = process.cwd();

/** Unquotes a TAP YAML scalar: 'it''s' → it's. */
function scalar(text) {
  const t = text.trim();
  if (t.startsWith("'") && t.endsWith("'")) return t.slice(1, -1).replaceAll("''", "'");
  if (t.startsWith('"') && t.endsWith('"')) {
    try {
      return JSON.parse(t);
    } catch {
      return t.slice(1, -1);
    }
  }
  return t;
}

/** The failing tests of node's TAP output: [{ name, where, lines }]. */
function fromTap(text) {
  const lines = text.split('\n');
  const names = []; // names[depth] = the subtest being reported at that depth
  const out = [];
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    const sub = /^( *)# Subtest: (.*)$/.exec(line);
    if (sub) {
      const depth = sub[1].length / 4;
      names.length = depth;
      names[depth] = sub[2];
      continue;
    }
    const nok = /^( *)not ok \d+ - (.*)$/.exec(line);
    if (!nok) continue;
    const indent = nok[1].length;
    const depth = indent / 4;
    // The YAML block: keys at indent + 2, block scalars deeper, ends with "...".
    const fields = {};
    let key = null;
    for (i++; i < lines.length; i++) {
      const l = lines[i];
      if (l.trim() === '...' && l.indexOf('...') === indent + 2) break;
      const kv = new RegExp(`^ {${indent + 2}}([A-Za-z_]+): ?(.*)$`).exec(l);
      if (kv) {
        key = kv[1];
        fields[key] = kv[2] === '|-' || kv[2] === '|' || kv[2] === '>-' ? [] : [scalar(kv[2])];
      } else if (key) {
        fields[key].push(l.slice(indent + 4));
      }
    }
    const failureType = fields.failureType?.[0];
    if (failureType === 'subtestsFailed') continue;
    const path = names.slice(0, depth + 1).filter(Boolean);
    const file = fields.location?.[0]?.replace(/:\d+:\d+$/, '');
    // tsx maps the location's line oddly; the first stack frame in the file is right.
    const frame = file && (fields.stack ?? []).find((f) => f.includes(file));
    const at = frame ? /\(?([^()\s]+:\d+):\d+\)?$/.exec(frame)?.[1] : file;
    const message = (fields.error ?? []).filter((l) => l.trim() !== '');
    const detail = [];
    if (fields.expected) detail.push(`expected: ${fields.expected.join(' ').trim()}`);
    if (fields.actual) detail.push(`actual:   ${fields.actual.join(' ').trim()}`);
    out.push({
      name: path.join(' › ') || nok[2],
      where: at ? relative(here, at) : '(no location)',
      lines: [...message, ...detail],
      kind: failureType,
    });
  }
  return out;
}

/** The failing tests of a Playwright JSON report. */
function fromPlaywright(report) {
  const out = [];
  const walk = (suite, titles) => {
    const here = suite.title && !suite.title.endsWith('.ts') ? [...titles, suite.title] : titles;
    for (const spec of suite.specs ?? []) {
      for (const t of spec.tests ?? []) {
        if (t.status !== 'unexpected' && t.status !== 'flaky') continue;
        const failed = (t.results ?? []).filter((r) => r.status !== 'passed' && r.status !== 'skipped');
        const last = failed.at(-1);
        const message = (last?.error?.message ?? last?.status ?? '').replace(ansi, '').split('\n');
        out.push({
          name: [...here, spec.title].join(' › ') + (t.status === 'flaky' ? ' (flaky: passed on retry)' : ''),
          where: `${spec.file}:${spec.line}`,
          lines: message.filter((l) => l.trim() !== ''),
        });
      }
    }
    for (const child of suite.suites ?? []) walk(child, here);
  };
  for (const s of report.suites ?? []) walk(s, []);
  return out;
}

let shown = 0;
let total = 0;
const printed = [];
for (const arg of process.argv.slice(2)) {
  const eq = arg.indexOf('=');
  const label = eq > 0 ? arg.slice(0, eq) : arg;
  const file = eq > 0 ? arg.slice(eq + 1) : arg;
  let failures;
  try {
    const text = readFileSync(file, 'utf8');
    failures = file.endsWith('.json') ? fromPlaywright(JSON.parse(text)) : fromTap(text);
  } catch (err) {
    printed.push(`[${label}] no report to read (${file}: ${err.code ?? err.message})`);
    continue;
  }
  total += failures.length;
  for (const f of failures) {
    if (shown === MAX_FAILURES) break;
    shown++;
    printed.push(`✖ [${label}] ${clip(f.name)}`, `    at ${f.where}`);
    for (const l of f.lines.slice(0, MAX_LINES)) printed.push(`    ${clip(l.replace(ansi, ''))}`);
    if (f.lines.length > MAX_LINES) printed.push(`    … ${f.lines.length - MAX_LINES} more lines in the pass's output above`);
  }
}
if (printed.length > 0) {
  console.log(`== failures (${total}; the full output of each is above)`);
  for (const l of printed) console.log(l);
  if (total > shown) console.log(`… and ${total - shown} more failures above`);
}
