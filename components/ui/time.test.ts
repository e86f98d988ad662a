import { test } from 'node:test';
import assert from 'node:assert/strict';

// The operator's zone: one with a half-hour offset, set before the formatters are built.
process.env.TZ = 'Asia/Kolkata';
const { axisLabels, formatClock, formatDateTime, formatTime, isoOf, timeTicks, timeZoneName } = await import('./time');

// 2026-12-02T13:24:14Z is 18:54:14 in Kolkata (UTC+5:30).
const AT = Date.parse('2026-12-02T13:24:14.120Z');

test("times are the 24-hour clock in the operator's zone, with the date only when it is not today", () => {
  assert.match(timeZoneName(), /^Asia\/(Kolkata|Calcutta)$/);
  assert.equal(formatClock(AT), '18:54:14');
  assert.equal(formatClock(Date.parse('2026-12-02T18:30:05Z')), '00:00:05', 'midnight is 00, never 24');
  assert.equal(formatTime(AT, AT + 60_000), '18:54:14');
  assert.match(formatTime(AT, AT + 86_400_000), /^Dec 2,? 18:54:14$/);
  assert.match(formatDateTime(AT, AT), /^Dec 2,? 18:54:14$/);
  assert.match(formatDateTime(AT, Date.parse('2027-01-10T00:00:00Z')), /^Dec 2,? 2026,? 18:54:14$/);
  assert.equal(isoOf(AT), '2026-12-02T13:24:14.120Z');
  assert.equal(isoOf('2026-12-02T13:24:14.120Z'), '2026-12-02T13:24:14.120Z');
});

test('axis ticks fall on round local times and are labelled with the same clock, dated when the day turns', () => {
  const ticks = timeTicks(AT, AT + 30_000, 8, AT);
  assert.deepEqual(ticks.map((t) => t.label), ['18:54:15', '18:54:20', '18:54:25', '18:54:30', '18:54:35', '18:54:40']);
  // Hourly ticks are on the local hour (here :00 local, which is :30 UTC).
  const hourly = timeTicks(AT, AT + 5 * 3_600_000, 6, AT);
  assert.ok(hourly.every((t) => new Date(t.at).getUTCMinutes() === 30), 'on the local hour');
  assert.deepEqual(hourly.map((t) => t.label), ['19:00', '20:00', '21:00', '22:00', '23:00']);
  const overMidnight = axisLabels([Date.parse('2026-12-02T18:00:00Z'), Date.parse('2026-12-02T18:30:00Z'), Date.parse('2026-12-02T19:00:00Z')], 1_800_000, AT);
  assert.match(overMidnight[1]!, /^Dec 3,? 00:00$/);
  assert.equal(overMidnight[2], '00:30');
});
