/**
 * What `watch` shows, as pure functions of what the observer knows: a
 * full-screen frame for a terminal (`watchScreen`, exactly `rows` lines,
 * none wider than `columns`) and, for a pipe or a file, one plain line per
 * change of state (`stateLine`) or of the view (`changeLine`). The command
 * (commands/watch.ts) decides when to draw and where; nothing here reads the
 * clock, the terminal or the observer, so tests call it with any size.
 */

import type { LeaseView, ObservedChange, ObserverState } from '../lib/client/index';
import { plain, table, type Style } from './format';
import { LEASE_HEADER, leaseRow } from './commands/leases';

/** What one frame or line shows: a snapshot of the observer. */
export interface WatchState {
  readonly selector: string;
  readonly state: ObserverState;
  /** Why the last attempt to (re)connect failed, while the observer retries. */
  readonly retry: string | undefined;
  /** The view, ordered by route. */
  readonly items: readonly LeaseView[];
  /** The time the frame is drawn at (epoch ms): expiry countdowns count from it. */
  readonly now: number;
}

const STATE_TEXT: Record<ObserverState, string> = {
  connecting: 'connecting…',
  ready: 'live',
  resyncing: 'resyncing (the view below may be stale)',
  error: 'stopped on an error',
  closed: 'closed',
};

/** The numeric columns of the lease table (TOKEN, RENEWALS, WAITERS): right-aligned. */
const NUMERIC = new Set([3, 5, 6]);

/** The feed's state in words, with why it retries while it does. */
export function feedText(s: Pick<WatchState, 'state' | 'retry'>): string {
  const retry = s.state !== 'ready' && s.retry !== undefined ? ` ${printable(s.retry)}; retrying` : '';
  return `${STATE_TEXT[s.state]}${retry}`;
}

function clock(now: number): string {
  return new Date(now).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/**
 * The terminal view: the title (selector, how many held, when drawn), the
 * feed's state, then the table, cut to fit. Always exactly `rows` lines
 * (blank ones at the bottom), each at most `columns` wide, so a frame drawn
 * from the top-left corner covers the screen and never scrolls or wraps.
 * When the leases do not fit, the last line says how many more there are.
 * A screen too short for the table keeps the title and the feed state (and
 * the count, with a third row).
 */
export function watchScreen(s: WatchState, columns: number, rows: number, style: Style = plain): string[] {
  const width = Math.max(1, Math.floor(columns));
  const height = Math.max(1, Math.floor(rows));
  const title = `${style.bold(printable(s.selector))}  ${s.items.length} held  ${clock(s.now)}`;
  const feed = `feed: ${s.state === 'ready' ? style.green(feedText(s)) : style.red(feedText(s))}`;
  const lines = [title, feed];
  const room = height - lines.length; // for the table's header, its rows and the "more" line
  if (room >= 1) {
    const fits = s.items.length <= room - 1;
    const shown = fits ? s.items : s.items.slice(0, Math.max(0, room - 2));
    // One row left and leases that do not fit: the count says more than a bare header.
    if (fits || room >= 2) {
      const rendered = table(LEASE_HEADER, shown.map((l) => leaseRow(l, s.now).map(printable)), style, NUMERIC);
      lines.push(...rendered.replace(/\n$/, '').split('\n'));
    }
    if (s.items.length === 0) {
      if (s.state === 'ready') lines.push(style.dim('(no lease held)'));
    } else if (!fits) {
      const more = s.items.length - shown.length;
      lines.push(style.dim(`… ${more} more (make the window taller to see them)`));
    }
  }
  const screen = lines.slice(0, height).map((l) => fitWidth(l, width));
  while (screen.length < height) screen.push('');
  return screen;
}

/**
 * A line for a pipe or a file when the feed's state changes (and when a retry
 * fails for a new reason): the selector, the state, how many are held, when.
 */
export function stateLine(s: WatchState): string {
  return `${printable(s.selector)}  ${feedText(s)}  ${s.items.length} held  ${clock(s.now)}`;
}

/** A line for a pipe or a file per change of the view: why, the route, and who holds it now. */
export function changeLine(c: ObservedChange, now: number): string {
  const lease = c.lease;
  const what = lease === undefined ? '(not held)' : `${printable(lease.owner_id)}  token ${lease.fencing_token}  expires ${lease.expires_at}`;
  return `${c.cause}  ${printable(c.route)}  ${what}  ${clock(now)}`;
}

/**
 * The columns a terminal gives `text`: escape sequences (ESC [ … final byte)
 * take none, East Asian wide and fullwidth characters and emoji take two,
 * combining marks none, everything else one.
 */
export function displayWidth(text: string): number {
  let w = 0;
  for (const part of splitEscapes(text)) if (!part.escape) for (const ch of part.text) w += charWidth(ch.codePointAt(0)!);
  return w;
}

/**
 * `text` cut to at most `columns` terminal columns, with `…` where it was
 * cut; escape sequences are kept whole and, when a cut drops the end of a
 * styled span, the style is reset so it does not leak into the next line.
 */
export function fitWidth(text: string, columns: number): string {
  if (displayWidth(text) <= columns) return text;
  const budget = Math.max(0, columns - 1); // room for the ellipsis
  let out = '';
  let used = 0;
  let styled = false;
  for (const part of splitEscapes(text)) {
    if (part.escape) {
      out += part.text;
      styled = true;
      continue;
    }
    for (const ch of part.text) {
      const w = charWidth(ch.codePointAt(0)!);
      if (used + w > budget) return `${out}${columns >= 1 ? '…' : ''}${styled ? '\x1b[0m' : ''}`;
      out += ch;
      used += w;
    }
  }
  return out;
}

/**
 * Text from elsewhere (a message, a route) made safe to print: control
 * characters would move the cursor or restyle the screen, so each shows as
 * `?`. Owner ids cannot hold them (the server refuses them), but a message
 * or a metadata value is not checked that way.
 */
export function printable(text: string): string {
  return text.replace(/\p{Cc}/gu, '?');
}

interface Part {
  readonly text: string;
  readonly escape: boolean;
}

// A CSI sequence (ESC [ parameters intermediates final), as the styles write.
const CSI = /\x1b\[[0-?]*[ -/]*[@-~]/g;

function splitEscapes(text: string): Part[] {
  const parts: Part[] = [];
  let at = 0;
  for (const m of text.matchAll(CSI)) {
    if (m.index > at) parts.push({ text: text.slice(at, m.index), escape: false });
    parts.push({ text: m[0], escape: true });
    at = m.index + m[0].length;
  }
  if (at < text.length) parts.push({ text: text.slice(at), escape: false });
  return parts;
}

const COMBINING = /[\p{Mn}\p{Me}]/u;

/** Columns one code point takes: a short table of the wide ranges (Unicode East Asian Width W and F, and emoji). */
function charWidth(cp: number): number {
  if (cp === 0x200b || COMBINING.test(String.fromCodePoint(cp))) return 0;
  if (
    (cp >= 0x1100 && cp <= 0x115f) ||
    (cp >= 0x2e80 && cp <= 0x303e) ||
    (cp >= 0x3041 && cp <= 0x33ff) ||
    (cp >= 0x3400 && cp <= 0x4dbf) ||
    (cp >= 0x4e00 && cp <= 0x9fff) ||
    (cp >= 0xa000 && cp <= 0xa4cf) ||
    (cp >= 0xac00 && cp <= 0xd7a3) ||
    (cp >= 0xf900 && cp <= 0xfaff) ||
    (cp >= 0xfe30 && cp <= 0xfe4f) ||
    (cp >= 0xff00 && cp <= 0xff60) ||
    (cp >= 0xffe0 && cp <= 0xffe6) ||
    (cp >= 0x1f300 && cp <= 0x1f64f) ||
    (cp >= 0x1f900 && cp <= 0x1f9ff) ||
    (cp >= 0x20000 && cp <= 0x3fffd)
  ) {
    return 2;
  }
  return 1;
}
