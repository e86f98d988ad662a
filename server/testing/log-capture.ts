/**
 * Test support: every server the tests start writes its log (JSON, debug
 * level, every request line) into `LEASEHOLD_TEST_LOG_DIR` when it is set
 * (scripts/test-unit.sh sets it for the whole run), and every secret the
 * tests are handed or send (tokens, session ids, cookie values) is noted
 * beside it. The last test of the run (tests/logs/secrets.test.ts) scans
 * those logs for those secrets.
 */

import { appendFileSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from '../engine/core/logger';
import { createLog, type ServerLog } from '../log';

export function testLogDir(): string | undefined {
  const dir = process.env.LEASEHOLD_TEST_LOG_DIR || undefined;
  // A directory named but not made yet (a pass run by hand) is made, not a stream error that stalls the test.
  if (dir) mkdirSync(dir, { recursive: true });
  return dir;
}

let captured: { dir: string; log: ServerLog } | undefined;

/** This test process's capturing logger, or undefined when the run does not capture. */
export function captureLogger(): Logger | undefined {
  const dir = testLogDir();
  if (!dir) return undefined;
  if (captured?.dir !== dir) {
    const log = createLog({ format: 'json', level: 'debug', instance: `test-${process.pid}`, destination: join(dir, `http-${process.pid}.log`) });
    if (!captured) process.once('exit', () => captured?.log.flush());
    captured = { dir, log };
  }
  return captured.log.logger;
}

/** Flush the capturing logger (before scanning in the same process). */
export function flushCapture(): void {
  captured?.log.flush();
}

const noted = new Set<string>();

function note(secret: unknown): void {
  const dir = testLogDir();
  if (!dir || typeof secret !== 'string' || secret.length < MIN_SECRET || noted.has(secret)) return;
  noted.add(secret);
  appendFileSync(join(dir, `secrets-${process.pid}.txt`), `${secret}\n`);
}

/** Secret-holding fields of an answer: a created token's secret, session ids, and anything else by these names. */
const SECRET_KEYS = new Set(['token', 'session_id', 'secret']);

function walk(v: unknown, depth = 0): void {
  if (depth > 8 || v === null || typeof v !== 'object') return;
  for (const [k, x] of Object.entries(v)) {
    if (SECRET_KEYS.has(k)) note(x);
    else walk(x, depth + 1);
  }
}

/** Note the secrets of one exchange: the credentials sent (bearer token, cookies), and those in the request's and the answer's bodies and cookies. */
export function noteSecrets(sentHeaders: Record<string, string | number>, sent: unknown, body: unknown, setCookie: string[] | string | undefined): void {
  if (!testLogDir()) return;
  for (const [name, value] of Object.entries(sentHeaders)) {
    const h = name.toLowerCase();
    if (h === 'authorization') note(String(value).replace(/^\S+\s+/, ''));
    else if (h === 'cookie') for (const part of String(value).split(';')) note(part.slice(part.indexOf('=') + 1).trim());
  }
  walk(sent);
  walk(body);
  for (const c of ([] as string[]).concat(setCookie ?? [])) note(c.slice(c.indexOf('=') + 1).split(';')[0]);
}

/** Secrets shorter than this are not noted (every real one is far longer: 35+ characters). */
const MIN_SECRET = 16;
const RUN = /[A-Za-z0-9_-]{16,}/g;

export interface ScanResult {
  files: number;
  bytes: number;
  lines: number;
  secrets: number;
  /** Each secret found, with the file it was found in. */
  leaks: Array<{ file: string; secret: string }>;
}

/**
 * The one deliberate display of a secret: the banner a first start prints
 * with the token it generated (server/main.ts, docs/operations.md). It is a
 * marker line and the token's line; it is never a log line, and it is left
 * out of the scan so that every other appearance still counts as a leak.
 */
export function withoutBootstrapBanner(text: string): string {
  return text.replace(/^ {2}bootstrap admin token \(shown once[^\n]*\n\n? {2}\S+\n/gm, '');
}

/**
 * Scan every `*.log` file in `dir` for every noted secret. Secrets are made
 * of `[A-Za-z0-9_-]`, so each run of those characters in the log is checked
 * for a secret starting at any of its offsets (through a 16-character index:
 * linear in the log's size, whatever the number of secrets).
 */
export function scanForSecrets(dir: string): ScanResult {
  const names = readdirSync(dir);
  const secrets = new Set<string>();
  for (const n of names.filter((n) => n.startsWith('secrets-'))) {
    for (const s of readFileSync(join(dir, n), 'utf8').split('\n')) if (s.length >= MIN_SECRET) secrets.add(s);
  }
  const byHead = new Map<string, string[]>();
  for (const s of secrets) {
    const head = s.slice(0, MIN_SECRET);
    byHead.set(head, [...(byHead.get(head) ?? []), s]);
  }
  const result: ScanResult = { files: 0, bytes: 0, lines: 0, secrets: secrets.size, leaks: [] };
  for (const n of names.filter((n) => n.endsWith('.log'))) {
    const text = withoutBootstrapBanner(readFileSync(join(dir, n), 'utf8'));
    result.files++;
    result.bytes += text.length;
    for (let i = text.indexOf('\n'); i >= 0; i = text.indexOf('\n', i + 1)) result.lines++;
    for (const m of text.matchAll(RUN)) {
      const run = m[0];
      for (let i = 0; i + MIN_SECRET <= run.length; i++) {
        const candidates = byHead.get(run.slice(i, i + MIN_SECRET));
        if (!candidates) continue;
        for (const s of candidates) if (run.startsWith(s, i)) result.leaks.push({ file: n, secret: s });
      }
    }
  }
  return result;
}
