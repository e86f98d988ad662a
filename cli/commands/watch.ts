/**
 * `watch`: the SDK's inventory observer drawn as a live table (redrawn on each
 * change, with the feed's state), or one JSON line per change for scripts.
 * Runs until interrupted.
 */

import type { Command } from 'commander';
import type { InventoryObserver, LeaseholdError, ObservedChange, ObserverState } from '../../lib/client/index';
import { jsonLine, styleFor } from '../format';
import { clientFor, example, print, withConnection, withJson, type CommonOptions } from '../common';
import { leaseTable } from './leases';

const STATE_TEXT: Record<ObserverState, string> = {
  connecting: 'connecting…',
  ready: 'live',
  resyncing: 'resyncing (the view below may be stale)',
  error: 'stopped on an error',
  closed: 'closed',
};

export function registerWatch(program: Command): void {
  example(
    withJson(
      withConnection(
        program
          .command('watch')
          .description('a live table of the leases matching a selector, redrawn as changes arrive; shows the feed state')
          .argument('<selector>', "e.g. 'lease://acme/renderers/*'"),
      ),
      'print one JSON line per change (and per feed state) instead of a table',
    ).action(async (selector: string, opts: CommonOptions) => {
      const observer = clientFor(opts).observeInventory(selector, { renewals: true });
      const stop = new Promise<void>((resolve) => {
        for (const sig of ['SIGINT', 'SIGTERM'] as const) process.once(sig, () => resolve());
      });
      if (opts.json) followJson(observer);
      else followTable(observer, selector);
      const failed = new Promise<never>((_, reject) =>
        observer.onStateChange((state) => {
          if (state === 'error') reject(observer.error);
        }),
      );
      try {
        await Promise.race([stop, failed]);
      } finally {
        observer.close();
      }
    }),
    "leasehold watch 'lease://acme/renderers/*'",
    "leasehold watch 'lease://acme/**' --json | jq .route",
  );
}

/**
 * State lines: one at the start (`connecting`), one per change of state,
 * and one with `error` when an attempt failed and the observer retries (once
 * per distinct reason), so a script tells "no leases" from "cannot connect".
 */
function followJson(observer: InventoryObserver): void {
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
}

function followTable(observer: InventoryObserver, selector: string): void {
  const style = styleFor(process.stdout);
  const tty = process.stdout.isTTY === true;
  const draw = (): void => {
    const state = observer.state;
    const items = [...observer.view.values()].sort((a, b) => (a.route < b.route ? -1 : a.route > b.route ? 1 : 0));
    const retry = state !== 'ready' && observer.retryReason ? ` ${observer.retryReason.message}; retrying` : '';
    const header = `${style.bold(selector)}  ${state === 'ready' ? style.green(STATE_TEXT[state]) : style.red(STATE_TEXT[state] + retry)}  ${items.length} held  ${new Date().toISOString()}\n`;
    // On a terminal redraw in place; into a pipe or file, append each frame.
    print(`${tty ? '\x1b[H\x1b[2J' : ''}${header}${leaseTable(items, style)}${tty ? '' : '\n'}`);
  };
  observer.onStateChange(draw);
  observer.onRetry(draw);
  observer.onChange(draw);
  // Expiry countdowns move between changes on a terminal.
  if (tty) setInterval(draw, 1000).unref();
  draw();
}
