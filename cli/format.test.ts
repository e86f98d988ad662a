import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseDuration, parseSince, relative, shortDuration, table, tableWriter, useColour } from './format';

test('durations parse with a unit or as bare milliseconds, and anything else is refused', () => {
  assert.equal(parseDuration('500ms'), 500);
  assert.equal(parseDuration('30s'), 30_000);
  assert.equal(parseDuration('1.5s'), 1500);
  assert.equal(parseDuration('5m'), 300_000);
  assert.equal(parseDuration('2h'), 7_200_000);
  assert.equal(parseDuration('1d'), 86_400_000);
  assert.equal(parseDuration('250'), 250);
  for (const bad of ['', 'soon', '5 minutes', '-1s', '1w', 's']) assert.equal(parseDuration(bad), undefined, bad);
});

test('short durations read as seconds, minutes, hours or days with their next unit', () => {
  assert.equal(shortDuration(0), '0s');
  assert.equal(shortDuration(12_400), '12s');
  assert.equal(shortDuration(245_000), '4m 05s');
  assert.equal(shortDuration(7_380_000), '2h 03m');
  assert.equal(shortDuration(3 * 86_400_000 + 4 * 3_600_000), '3d 04h');
});

test('times read relative to now, in the future or the past', () => {
  const now = Date.parse('2026-01-01T00:00:00Z');
  assert.equal(relative('2026-01-01T00:00:25Z', now), 'in 25s');
  assert.equal(relative('2025-12-31T23:56:55Z', now), '3m 05s ago');
  assert.equal(relative(null, now), '-');
});

test('--since takes an ISO time or a duration ago', () => {
  const now = Date.parse('2026-01-01T12:00:00Z');
  assert.equal(parseSince('10m', now), '2026-01-01T11:50:00.000Z');
  assert.equal(parseSince('2026-01-01T08:00:00Z', now), '2026-01-01T08:00:00.000Z');
  assert.equal(parseSince('yesterday', now), undefined);
});

test('tables align columns, right-align numeric ones and leave no trailing spaces', () => {
  const out = table(['ROUTE', 'TOKEN', 'OWNER'], [['lease://a/b/c', '7', 'w'], ['lease://a/b/long-name', '1234', 'worker-2']], undefined, new Set([1]));
  assert.equal(out, ['ROUTE                  TOKEN  OWNER', 'lease://a/b/c              7  w', 'lease://a/b/long-name   1234  worker-2', ''].join('\n'));
});

test('colour is used only on a terminal and never with NO_COLOR', () => {
  assert.equal(useColour({ write() {}, isTTY: true }, {}), true);
  assert.equal(useColour({ write() {}, isTTY: true }, { NO_COLOR: '1' }), false);
  assert.equal(useColour({ write() {}, isTTY: false }, {}), false);
});

test('a table written batch by batch has its header once, and columns that widen but never shrink', () => {
  const write = tableWriter(['TIME', 'EVENT', 'NOTE']);
  assert.equal(write([]), 'TIME  EVENT  NOTE\n');
  assert.equal(write([['t1', 'acquire', 'a']]), 't1    acquire  a\n');
  assert.equal(write([['t2', 'release_request', 'b'], ['t3', 'renew', 'c']]), 't2    release_request  b\nt3    renew            c\n');
  assert.equal(write([]), '');
});
