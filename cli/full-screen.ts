/**
 * A full-screen view on a terminal, as `top` and `less` draw one: the
 * alternate screen (so the shell's scrollback is left as it was), the cursor
 * hidden, line wrapping off, and each frame drawn over the last one from the
 * top-left corner. A frame never writes more lines than the window has and
 * never ends with a line break, so it cannot scroll; `leave()` puts the
 * terminal back (main screen, cursor, wrapping) and is safe to call twice.
 */

import type { Out } from './format';

/** Enter the alternate screen, hide the cursor, stop wrapping long lines (DECAWM off). */
export const ENTER_SCREEN = '\x1b[?1049h\x1b[?25l\x1b[?7l';
/** Wrap again, show the cursor, back to the main screen (which the terminal restores as it was). */
export const LEAVE_SCREEN = '\x1b[?7h\x1b[?25h\x1b[?1049l';
/** Cursor to the top-left corner. */
export const HOME = '\x1b[H';
/** Erase the whole line the cursor is on (the cursor stays where it is). */
export const CLEAR_LINE = '\x1b[2K';
/** Erase from the cursor to the end of the screen. */
export const CLEAR_BELOW = '\x1b[J';

/**
 * The bytes that draw `lines` over whatever the screen showed: home, then
 * each line erased and written, lines joined by CR LF. When there are fewer
 * lines than `rows`, the rest of the screen is erased; there are never more
 * (the extra ones are dropped), so the frame cannot scroll.
 */
export function frame(lines: readonly string[], rows: number): string {
  const shown = lines.slice(0, Math.max(1, rows));
  let out = HOME + shown.map((l) => CLEAR_LINE + l).join('\r\n');
  // Erasing from the end of a full last line would take its last character
  // with it on some terminals, so only a short frame erases below itself.
  if (shown.length < rows) out += shown.length === 0 ? CLEAR_BELOW : `\r\n${CLEAR_BELOW}`;
  return out;
}

export interface ScreenOut extends Out {
  readonly columns?: number | undefined;
  readonly rows?: number | undefined;
  on(event: 'resize', listener: () => void): unknown;
  off(event: 'resize', listener: () => void): unknown;
}

/** The alternate screen of one terminal, entered at construction; `draw` redraws in place, `leave` restores. */
export class FullScreen {
  readonly #out: ScreenOut;
  readonly #render: (columns: number, rows: number) => readonly string[];
  #left = false;
  readonly #redraw = (): void => this.draw();
  readonly #onExit = (): void => this.leave();

  /**
   * `render` makes a frame for a window of the given size; it is called on
   * each `draw()` and whenever the window is resized (SIGWINCH, which Node
   * turns into the stream's `resize` event).
   */
  constructor(out: ScreenOut, render: (columns: number, rows: number) => readonly string[]) {
    this.#out = out;
    this.#render = render;
    out.write(ENTER_SCREEN);
    out.on('resize', this.#redraw);
    // However the process ends (an uncaught error, process.exit elsewhere),
    // the shell gets its screen back: writes to a terminal are synchronous.
    process.once('exit', this.#onExit);
  }

  /** The window's size now (80 × 24 if the terminal does not say). */
  get size(): { columns: number; rows: number } {
    return { columns: this.#out.columns || 80, rows: this.#out.rows || 24 };
  }

  draw(): void {
    if (this.#left) return;
    const { columns, rows } = this.size;
    this.#out.write(frame(this.#render(columns, rows), rows));
  }

  leave(): void {
    if (this.#left) return;
    this.#left = true;
    this.#out.off('resize', this.#redraw);
    process.off('exit', this.#onExit);
    this.#out.write(LEAVE_SCREEN);
  }
}
