/**
 * `leasehold watch` as a terminal program (docs/cli.md "watch"), the real CLI
 * against a real server. On a pseudo-terminal (`script` from util-linux): the
 * alternate screen entered and left (Ctrl-C, SIGTERM, an error), frames
 * redrawn from the top-left corner that never scroll or wrap, a resize
 * redrawn at the new size. Into a pipe: plain lines, one per change.
 * (`--json` is covered in commands.test.ts.)
 */

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { leasePath, rid, type TestServer } from '../../server/testing/harness';
import { waitFor } from '../../server/testing/wait';
import { CLEAR_BELOW, CLEAR_LINE, ENTER_SCREEN, HOME, LEAVE_SCREEN } from '../../cli/full-screen';
import { HAS_SCRIPT, startCli, type CliHarness } from './support';

let s: TestServer;
let cli: CliHarness;
let stop: () => Promise<void>;
before(async () => ({ s, cli, stop } = await startCli()));
after(() => stop());

const NO_TERMINAL = HAS_SCRIPT ? false : 'script(1) from util-linux is not installed: no pseudo-terminal to run the CLI on';

async function hold(route: string, owner: string): Promise<{ sessionId: string; leaseId: string; token: number }> {
  const { sessionId } = await s.openSession(owner, 60_000);
  const r = await s.call('POST', leasePath(route, 'acquire'), { session_id: sessionId, request_id: rid(), ttl_ms: 60_000 });
  assert.equal(r.status, 200, r.text);
  return { sessionId, leaseId: r.body.lease.lease_id, token: r.body.lease.fencing_token };
}

/** Any escape sequence the CLI may write: CSI (`ESC [ … final`) and the private modes. */
const ESCAPES = /\x1b\[[0-?]*[ -/]*[@-~]/g;

interface Frame {
  /** The frame's lines as they show on the screen, without escape codes. */
  readonly lines: string[];
  /** Line breaks the frame writes: from the top-left corner, fewer than the window's rows means it cannot scroll. */
  readonly breaks: number;
}

/** The frames written between entering the alternate screen and leaving it (or the end of what arrived so far). */
function framesOf(output: string): Frame[] {
  const start = output.indexOf(ENTER_SCREEN);
  if (start < 0) return [];
  const end = output.indexOf(LEAVE_SCREEN, start);
  const screen = output.slice(start + ENTER_SCREEN.length, end < 0 ? undefined : end);
  assert.ok(screen === '' || screen.startsWith(HOME), `everything on the screen is a frame drawn from the top-left corner: ${JSON.stringify(screen.slice(0, 40))}`);
  return screen
    .split(HOME)
    .slice(1)
    .map((raw) => ({
      lines: raw
        .replaceAll(CLEAR_BELOW, '')
        // The terminal turns each LF into CR LF on its way out (onlcr).
        .split(/\r*\n/)
        .map((l) => l.replaceAll(CLEAR_LINE, '').replace(ESCAPES, '')),
      breaks: raw.split('\n').length - 1,
    }));
}

function assertFits(frames: readonly Frame[], columns: number, rows: number): void {
  assert.ok(frames.length > 0);
  for (const f of frames) {
    assert.ok(f.breaks <= rows - 1, `a frame of ${f.breaks} line breaks would scroll a ${rows}-row window:\n${f.lines.join('\n')}`);
    for (const l of f.lines) assert.ok([...l].length <= columns, `a line wider than ${columns} columns would wrap: ${l}`);
  }
}

test('on a terminal, watch is a full-screen view: alternate screen, header and feed state, rows cut to 80×24 with "N more", redrawn in place, resized with the window, restored on Ctrl-C', { skip: NO_TERMINAL }, async (t) => {
  await Promise.all(Array.from({ length: 40 }, (_, i) => hold(`lease://cli/tty/job-${String(i + 1).padStart(2, '0')}`, `renderer-with-a-long-owner-name-${i + 1}`)));
  const run = cli.startInTerminal(['watch', 'lease://cli/tty/*'], { columns: 80, rows: 24, env: { NO_COLOR: undefined } });
  t.after(() => run.kill());
  const isLive = (more: number) => (f: Frame) =>
    /^lease:\/\/cli\/tty\/\*  40 held  /.test(f.lines[0] ?? '') && f.lines[1] === 'feed: live' && f.lines.includes(`… ${more} more (make the window taller to see them)`);
  const first = await waitFor('a live 80×24 frame with 40 leases', () => framesOf(run.stdout), (frames) => frames.some(isLive(20)));
  // The countdowns redraw each second: wait for frames drawn over earlier ones.
  const at80 = await waitFor('the view redrawn in place', () => framesOf(run.stdout), (frames) => frames.length >= first.length + 2);
  assertFits(at80, 80, 24);
  const full = at80.find(isLive(20))!;
  assert.equal(full.lines.length, 24, 'a frame covers the whole window');
  assert.match(full.lines[2]!, /^ROUTE\s+OWNER/);
  assert.match(full.lines[3]!, /^lease:\/\/cli\/tty\/job-01 /);
  assert.ok(full.lines.slice(3, 23).every((l) => l.endsWith('…')), 'rows wider than the window are cut, not wrapped');
  assert.equal(run.stdout.split(ENTER_SCREEN).length - 1, 1, 'the alternate screen is entered once');

  await run.resize(100, 30);
  const resized = await waitFor('a frame at 100×30', () => framesOf(run.stdout), (frames) => frames.some(isLive(14)));
  assertFits(resized, 100, 30);
  assert.equal(resized.find(isLive(14))!.lines.length, 30);

  run.type('\x03'); // Ctrl-C
  assert.equal(await run.exited, 0, run.stdout);
  // Left last: main screen back, cursor shown, wrapping on; nothing drawn after.
  assert.ok(run.stdout.endsWith(LEAVE_SCREEN), `ends by leaving the alternate screen: ${JSON.stringify(run.stdout.slice(-80))}`);
  assert.deepEqual([ENTER_SCREEN.includes('\x1b[?1049h'), LEAVE_SCREEN.includes('\x1b[?1049l'), LEAVE_SCREEN.includes('\x1b[?25h')], [true, true, true]);
});

test('on a terminal, SIGTERM leaves the alternate screen and shows the cursor again', { skip: NO_TERMINAL }, async (t) => {
  const run = cli.startInTerminal(['watch', 'lease://cli/tty-term/*'], { columns: 80, rows: 24 });
  t.after(() => run.kill());
  await waitFor('a live frame', () => framesOf(run.stdout), (frames) => frames.some((f) => f.lines[1] === 'feed: live'));
  process.kill(await run.pid(), 'SIGTERM');
  assert.equal(await run.exited, 0, run.stdout);
  assert.ok(run.stdout.endsWith(LEAVE_SCREEN), JSON.stringify(run.stdout.slice(-80)));
});

test('on a terminal, an error leaves the alternate screen before it is printed, so it stays readable', { skip: NO_TERMINAL }, async (t) => {
  const other = await s.createToken(['lease://elsewhere/**#read']);
  const run = cli.startInTerminal(['watch', 'lease://cli/tty-denied/*'], { columns: 80, rows: 24, env: { LEASEHOLD_TOKEN: other } });
  t.after(() => run.kill());
  assert.equal(await run.exited, 1, run.stdout);
  const left = run.stdout.indexOf(LEAVE_SCREEN);
  assert.ok(run.stdout.indexOf(ENTER_SCREEN) >= 0 && left > run.stdout.indexOf(ENTER_SCREEN), 'entered, then left');
  assert.match(run.stdout.slice(left + LEAVE_SCREEN.length), /^leasehold: .*\(access_denied/m);
  assert.doesNotMatch(run.stdout.slice(0, left), /leasehold: /, 'the error is not printed on the alternate screen');
});

test('into a pipe, watch prints plain lines: the feed state, then one line per change, with no escape codes', async (t) => {
  await hold('lease://cli/pipe/first', 'one');
  const run = cli.start(['watch', 'lease://cli/pipe/*'], { env: { NO_COLOR: undefined } });
  t.after(() => run.child.kill('SIGKILL'));
  await run.waitFor(/^lease:\/\/cli\/pipe\/\*  live  1 held  /m);
  const second = await hold('lease://cli/pipe/second', 'two');
  await run.waitFor(/^acquired  lease:\/\/cli\/pipe\/second  two  token \d+/m);
  const r = await s.call('POST', leasePath('lease://cli/pipe/second', 'release'), { session_id: second.sessionId, request_id: rid(), lease_id: second.leaseId, fencing_token: second.token });
  assert.equal(r.status, 200, r.text);
  await run.waitFor(/^released  lease:\/\/cli\/pipe\/second  \(not held\)/m);
  run.child.kill('SIGTERM');
  assert.equal(await run.exited, 0, run.stderr);
  assert.doesNotMatch(run.stdout, /\x1b/, 'no escape codes into a pipe');
  const lines = run.stdout.trimEnd().split('\n').map((l) => l.replace(/  \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/, ''));
  assert.deepEqual(
    lines.map((l) => l.replace(/token \d+  expires \S+/, 'token N')),
    [
      'lease://cli/pipe/*  connecting…  0 held',
      'snapshot  lease://cli/pipe/first  one  token N',
      'lease://cli/pipe/*  live  1 held',
      'acquired  lease://cli/pipe/second  two  token N',
      'released  lease://cli/pipe/second  (not held)',
      'lease://cli/pipe/*  closed  1 held',
    ],
  );
});
