import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { LeaseView } from '../lib/client/index';
import { changeLine, displayWidth, fitWidth, stateLine, watchScreen, type WatchState } from './watch-view';
import type { Style } from './format';

const NOW = Date.parse('2026-01-01T00:00:00Z');

function lease(i: number, owner = `renderer-${i}`): LeaseView {
  return {
    route: `lease://acme/renderers/job-${String(i).padStart(2, '0')}`,
    owner_id: owner,
    holder_incarnation: `inc_${'x'.repeat(26)}${i}`,
    fencing_token: 1000 + i,
    acquired_at: '2025-12-31T23:59:00Z',
    renewed_at: '2025-12-31T23:59:50Z',
    expires_at: '2026-01-01T00:00:30Z',
    max_expires_at: '2026-01-01T01:00:00Z',
    ttl_ms: 30_000,
    remaining_ms: 30_000,
    renewal_count: i,
    revision: i,
    metadata: null,
    waiters: 0,
    release_request: null,
  };
}

function state(items: readonly LeaseView[], over: Partial<WatchState> = {}): WatchState {
  return { selector: 'lease://acme/renderers/*', state: 'ready', retry: undefined, items, now: NOW, ...over };
}

const forty = Array.from({ length: 40 }, (_, i) => lease(i + 1));
const strip = (s: string): string => s.replace(/\x1b\[[0-?]*[ -/]*[@-~]/g, '');

test('at 80×24 with 40 leases the screen is exactly 24 lines, none wider than 80, with the header, the feed state and "20 more"', () => {
  const lines = watchScreen(state(forty), 80, 24);
  assert.equal(lines.length, 24);
  for (const l of lines) assert.ok(displayWidth(l) <= 80, `${displayWidth(l)} columns: ${l}`);
  assert.match(lines[0]!, /^lease:\/\/acme\/renderers\/\*  40 held  2026-01-01T00:00:00Z$/);
  assert.equal(lines[1], 'feed: live');
  assert.match(lines[2]!, /^ROUTE\s+OWNER\s+INCARNATION/);
  assert.match(lines[3]!, /^lease:\/\/acme\/renderers\/job-01\s+renderer-1\s/);
  assert.match(lines[22]!, /^lease:\/\/acme\/renderers\/job-20\s/);
  assert.equal(lines[23], '… 20 more (make the window taller to see them)');
});

test('lines wider than the window are cut with an ellipsis instead of wrapping', () => {
  const lines = watchScreen(state(forty), 80, 24);
  // The table is wider than 80 columns (the incarnation is 30 characters): its rows are cut.
  assert.ok(lines.slice(2, 23).every((l) => l.length === 80 && l.endsWith('…')));
  assert.equal(displayWidth(fitWidth('abcdef', 4)), 4);
  assert.equal(fitWidth('abcdef', 4), 'abc…');
  assert.equal(fitWidth('abc', 4), 'abc');
});

test('when everything fits there is no "more" line, and the rest of the screen is blank', () => {
  const lines = watchScreen(state(forty.slice(0, 3)), 200, 10);
  assert.equal(lines.length, 10);
  assert.equal(lines.filter((l) => /more/.test(l)).length, 0);
  assert.deepEqual(lines.slice(6), ['', '', '', '']);
  assert.match(lines[5]!, /job-03/);
});

test('exactly as many leases as the screen has rows for shows them all, one more needs the "more" line', () => {
  // 10 rows: title, feed, table header, then 7 rows.
  assert.match(watchScreen(state(forty.slice(0, 7)), 200, 10)[9]!, /job-07/);
  const over = watchScreen(state(forty.slice(0, 8)), 200, 10);
  assert.match(over[8]!, /job-06/);
  assert.match(over[9]!, /^… 2 more/);
});

test('a resized window gets a frame of its own size', () => {
  const small = watchScreen(state(forty), 40, 8);
  assert.equal(small.length, 8);
  assert.ok(small.every((l) => displayWidth(l) <= 40));
  assert.match(small[7]!, /^… 36 more/);
  const big = watchScreen(state(forty), 160, 50);
  assert.equal(big.length, 50);
  assert.ok(big.slice(3, 43).every((l) => !l.endsWith('…')), 'at 160 columns nothing is cut');
  assert.equal(big.filter((l) => /more/.test(l)).length, 0);
});

test('a window too short for the table keeps the header and the feed state', () => {
  assert.deepEqual(watchScreen(state(forty), 80, 2), ['lease://acme/renderers/*  40 held  2026-01-01T00:00:00Z', 'feed: live']);
  assert.deepEqual(watchScreen(state(forty), 80, 1), ['lease://acme/renderers/*  40 held  2026-01-01T00:00:00Z']);
  assert.match(watchScreen(state(forty), 80, 3)[2]!, /^… 40 more/);
  assert.deepEqual(watchScreen(state(forty), 80, 4).slice(2).map((l) => l.split(/\s+/).slice(0, 2).join(' ')), ['ROUTE OWNER', '… 40']);
});

test('while it cannot connect, the feed line says why and that it retries; an empty live view says nothing is held', () => {
  const down = watchScreen(state([], { state: 'connecting', retry: 'cannot open the live stream at http://x/api/v1/inventory/stream: connection refused' }), 200, 6);
  assert.equal(down[1], 'feed: connecting… cannot open the live stream at http://x/api/v1/inventory/stream: connection refused; retrying');
  assert.deepEqual(watchScreen(state([]), 80, 6).slice(2, 4).map((l) => l.split(/\s+/)[0]), ['ROUTE', '(no']);
  assert.match(watchScreen(state(forty, { state: 'resyncing' }), 80, 24)[1]!, /^feed: resyncing \(the view below may be stale\)$/);
});

test('styles do not count toward the width, and a cut inside a styled span resets the style', () => {
  const colour: Style = { bold: (s) => `\x1b[1m${s}\x1b[22m`, dim: (s) => `\x1b[2m${s}\x1b[22m`, red: (s) => `\x1b[31m${s}\x1b[39m`, green: (s) => `\x1b[32m${s}\x1b[39m` };
  const lines = watchScreen(state(forty), 80, 24, colour);
  assert.equal(lines.length, 24);
  for (const l of lines) assert.ok(displayWidth(l) <= 80, strip(l));
  assert.deepEqual(lines.map(strip), watchScreen(state(forty), 80, 24));
  const cut = fitWidth(colour.red('x'.repeat(100)), 10);
  assert.equal(strip(cut), `${'x'.repeat(9)}…`);
  assert.ok(cut.endsWith('\x1b[0m'));
});

test('wide characters take two columns, and control characters never reach the terminal', () => {
  assert.equal(displayWidth('作業者'), 6);
  assert.equal(fitWidth('作業者-1', 5), '作業…');
  const lines = watchScreen(state([lease(1, '作業者'.repeat(30))]), 80, 6);
  assert.ok(lines.every((l) => displayWidth(l) <= 80));
  const evil = watchScreen(state([], { state: 'connecting', retry: 'bad\x1b[2Jthing\n' }), 80, 4);
  assert.equal(evil[1], 'feed: connecting… bad?[2Jthing?; retrying');
});

test('plain lines: a state line and one line per change, without escape codes', () => {
  assert.equal(stateLine(state(forty)), 'lease://acme/renderers/*  live  40 held  2026-01-01T00:00:00Z');
  assert.equal(
    changeLine({ route: 'lease://acme/renderers/job-01', lease: lease(1), cause: 'acquired' }, NOW),
    'acquired  lease://acme/renderers/job-01  renderer-1  token 1001  expires 2026-01-01T00:00:30Z  2026-01-01T00:00:00Z',
  );
  assert.equal(changeLine({ route: 'lease://acme/renderers/job-01', lease: undefined, cause: 'released' }, NOW), 'released  lease://acme/renderers/job-01  (not held)  2026-01-01T00:00:00Z');
});
