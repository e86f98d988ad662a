/**
 * `watch`: the SDK's inventory observer, three ways. On a terminal, a
 * full-screen live table with the feed's state (full-screen.ts draws it, the
 * pure watch-view.ts lays it out); into a pipe or a file, one plain line per
 * change; with `--json`, one JSON line per change for scripts. Runs until
 * interrupted (SIGINT, SIGTERM) or the observer stops on an error.
 */

import type { Command } from 'commander';
import type { InventoryObserver, LeaseholdError, LeaseView, ObservedChange } from '../../lib/client/index';
import { FullScreen } from '../full-screen';
import { jsonLine, styleFor } from '../format';
import { clientFor, example, print, withConnection, withJson, type CommonOptions } from '../common';
import { changeLine, stateLine, watchScreen, type WatchState } from '../watch-view';

export function registerWatch(program: Command): void {
  example(
    withJson(
      withConnection(
        program
          .command('watch')
          .description(
            'a live table of the leases matching a selector with the feed state: full-screen on a terminal (redrawn in place, cut to the window, Ctrl-C to leave); one plain line per change into a pipe or a file',
          )
          .argument('<selector>', "e.g. 'lease://acme/renderers/*'"),
      ),
      'print one JSON line per change (and per feed state) instead of a table',
    ).action(async (selector: string, opts: CommonOptions) => {
      const screen = !opts.json && process.stdout.isTTY === true;
      // Renewal hints keep the expiry countdowns current; a log of changes
      // would get a line per renewal from them, so plain lines go without.
      const observer = clientFor(opts).observeInventory(selector, { renewals: opts.json === true || screen });
      const stop = new Promise<void>((resolve) => {
        for (const sig of ['SIGINT', 'SIGTERM'] as const) process.once(sig, () => resolve());
      });
      const failed = new Promise<never>((_, reject) =>
        observer.onStateChange((state) => {
          if (state === 'error') reject(observer.error);
        }),
      );
      const end = opts.json ? followJson(observer) : screen ? followScreen(observer) : followLines(observer);
      try {
        await Promise.race([stop, failed]);
      } finally {
        // The terminal first, so that an error is printed on the main screen.
        end();
        observer.close();
      }
    }),
    "leasehold watch 'lease://acme/renderers/*'",
    "leasehold watch 'lease://acme/renderers/*' > watch.log     # one line per change",
    "leasehold watch 'lease://acme/**' --json | jq .route",
  );
}

/** What the observer knows now, for the renderers of watch-view.ts. */
function snapshot(observer: InventoryObserver): WatchState {
  const items: LeaseView[] = [...observer.view.values()].sort((a, b) => (a.route < b.route ? -1 : a.route > b.route ? 1 : 0));
  return { selector: observer.selector, state: observer.state, retry: observer.retryReason?.message, items, now: Date.now() };
}

/**
 * State lines: one at the start (`connecting`), one per change of state,
 * and one with `error` when an attempt failed and the observer retries (once
 * per distinct reason), so a script tells "no leases" from "cannot connect".
 */
function followJson(observer: InventoryObserver): () => void {
  let last = '';
  const state = (error?: LeaseholdError): void => {
    const line = jsonLine({ type: 'state', state: observer.state, ...(error ? { error: { code: error.code, message: error.message } } : {}) });
    if (line !== last) print(line);
    last = line;
  };
  state();
  observer.onStateChange(() => state(observer.state === 'error' ? observer.error : undefined));
  observer.onRetry((error) => state(error));
  observer.onChange((changes: readonly ObservedChange[]) => {
    for (const c of changes) print(jsonLine({ type: 'change', route: c.route, cause: c.cause, lease: c.lease ?? null }));
  });
  return () => {};
}

/**
 * Into a pipe or a file: a state line at the start, on each change of state
 * and on each new reason a retry failed for; then one line per change of the
 * view (the first listing included, as `snapshot` lines). Appended, never
 * redrawn, and without escape codes, so `tail -f` and `grep` read it.
 */
function followLines(observer: InventoryObserver): () => void {
  let last = '';
  const state = (): void => {
    const s = snapshot(observer);
    // The time is not a change: the same state and count print once.
    const key = `${s.state} ${s.retry ?? ''} ${s.items.length}`;
    if (key !== last) print(`${stateLine(s)}
`);
    last = key;
  };
  state();
  observer.onStateChange(state);
  observer.onRetry(state);
  observer.onChange((changes) => {
    const now = Date.now();
    print(changes.map((c) => `${changeLine(c, now)}
`).join(''));
  });
  return () => {};
}

/**
 * On a terminal: the alternate screen, redrawn in place on each change (at
 * most once per turn of the event loop, however many arrive together), each
 * second for the countdowns, and when the window is resized. Returns what
 * puts the terminal back.
 */
function followScreen(observer: InventoryObserver): () => void {
  const style = styleFor(process.stdout);
  const screen = new FullScreen(process.stdout, (columns, rows) => watchScreen(snapshot(observer), columns, rows, style));
  let pending: NodeJS.Immediate | undefined;
  const redraw = (): void => {
    pending ??= setImmediate(() => {
      pending = undefined;
      screen.draw();
    });
  };
  observer.onStateChange(redraw);
  observer.onRetry(redraw);
  observer.onChange(redraw);
  const ticker = setInterval(() => screen.draw(), 1000);
  screen.draw();
  return () => {
    clearInterval(ticker);
    if (pending) clearImmediate(pending);
    screen.leave();
  };
}
