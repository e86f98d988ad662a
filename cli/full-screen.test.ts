import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { test } from 'node:test';
import { CLEAR_BELOW, CLEAR_LINE, ENTER_SCREEN, frame, FullScreen, HOME, LEAVE_SCREEN } from './full-screen';

class FakeTerminal extends EventEmitter {
  readonly isTTY = true;
  written = '';
  constructor(
    public columns: number,
    public rows: number,
  ) {
    super();
  }
  write(text: string): void {
    this.written += text;
  }
  resize(columns: number, rows: number): void {
    this.columns = columns;
    this.rows = rows;
    this.emit('resize');
  }
}

test('a full frame starts at home, erases each line before writing it, and never ends with a line break', () => {
  const out = frame(['a', 'b', 'c'], 3);
  assert.equal(out, `${HOME}${CLEAR_LINE}a\r\n${CLEAR_LINE}b\r\n${CLEAR_LINE}c`);
  assert.equal(out.split('\n').length - 1, 2, 'rows − 1 line breaks: nothing scrolls');
});

test('a short frame erases the rest of the screen; a long one is cut to the window', () => {
  assert.equal(frame(['a'], 3), `${HOME}${CLEAR_LINE}a\r\n${CLEAR_BELOW}`);
  assert.equal(frame(['a', 'b', 'c', 'd'], 2), `${HOME}${CLEAR_LINE}a\r\n${CLEAR_LINE}b`);
});

test('the screen enters the alternate screen, redraws on resize with the new size, and leaves once', () => {
  const term = new FakeTerminal(80, 24);
  const exitListeners = process.listenerCount('exit');
  const sizes: string[] = [];
  const screen = new FullScreen(term, (columns, rows) => {
    sizes.push(`${columns}x${rows}`);
    return [`${columns}x${rows}`];
  });
  assert.equal(term.written, ENTER_SCREEN);
  assert.equal(process.listenerCount('exit'), exitListeners + 1, 'an exit hook restores the terminal however the process ends');
  screen.draw();
  term.resize(100, 30);
  assert.deepEqual(sizes, ['80x24', '100x30']);
  screen.leave();
  screen.leave();
  term.resize(120, 40);
  screen.draw();
  assert.deepEqual(sizes, ['80x24', '100x30'], 'nothing is drawn after leaving');
  assert.ok(term.written.endsWith(LEAVE_SCREEN));
  assert.equal(term.written.split(LEAVE_SCREEN).length - 1, 1, 'left once');
  assert.equal(process.listenerCount('exit'), exitListeners, 'the exit hook goes once the screen is left');
});
