/**
 * `audit`: the trail newest first, or `--follow`ed. The live feed carries
 * lease changes, not audit rows, so following polls the trail (every
 * `--interval`, 1 s by default) and prints each new event once, oldest first.
 */

import { InvalidArgumentError, type Command } from 'commander';
import type { AuditEvent, AuditEventType, AuditQuery, LeaseholdClient } from '../../lib/client/index';
import { jsonLine, parseSince, styleFor, tableWriter } from '../format';
import { clientFor, durationArg, example, positiveInt, print, withConnection, withJson, type CommonOptions } from '../common';
import { AUDIT_HEADER, auditRow, auditTable } from './leases';

interface AuditOptions extends CommonOptions {
  route?: string;
  type?: AuditEventType;
  since?: string;
  limit?: number;
  follow?: boolean;
  interval?: number;
}

function sinceArg(value: string): string {
  const iso = parseSince(value);
  if (iso === undefined) throw new InvalidArgumentError('an ISO time (2026-01-01T12:00:00Z) or a duration ago (10m, 2h, 1d)');
  return iso;
}

export function registerAudit(program: Command): void {
  example(
    withJson(
      withConnection(
        program
          .command('audit')
          .description('the audit trail, newest first, or followed live with --follow')
          .option('--route <selector>', 'a route or selector (default lease://**)')
          .option('--type <event>', 'one event type, e.g. lease_force_release')
          .option('--since <time>', 'from this ISO time, or this long ago (10m, 2h)', sinceArg)
          .option('--limit <n>', 'events to show (default 50, at most 1000)', positiveInt)
          .option('-f, --follow', 'keep printing new events as they are recorded')
          .option('--interval <duration>', 'how often --follow asks for new events (default 1s)', durationArg),
      ),
    ).action(async (opts: AuditOptions) => {
      const client = clientFor(opts);
      const query: AuditQuery = { ...(opts.route ? { route: opts.route } : {}), ...(opts.type ? { eventType: opts.type } : {}), ...(opts.since ? { since: opts.since } : {}) };
      const page = await client.listAudit({ ...query, limit: opts.limit ?? 50 });
      const style = styleFor(process.stdout);
      if (!opts.follow) {
        if (opts.json) for (const e of page.items) print(jsonLine(e));
        else if (page.items.length > 0) print(auditTable(page.items, style));
        return;
      }
      // Following reads oldest first, like `tail -f`, under one header; times
      // are absolute, since a relative one is stale as soon as it scrolls up.
      const rows = tableWriter(AUDIT_HEADER, style);
      const show = (items: readonly AuditEvent[]): void => {
        if (opts.json) for (const e of items) print(jsonLine(e));
        else print(rows(items.map((e) => auditRow(e, e.time))));
      };
      show([...page.items].reverse());
      await follow(client, query, page.items, opts.interval ?? 1000, show);
    }),
    "leasehold audit --route 'lease://acme/**' --since 1h",
    'leasehold audit --type lease_force_release --follow --json',
  );
}

/**
 * Events are printed once they are SETTLE_MS old (by this machine's clock),
 * oldest first: with several instances each writes its audit in batches, so
 * an older event can become readable a moment after a newer one from another
 * instance; holding the newest back keeps the followed trail in time order.
 */
const SETTLE_MS = 500;

async function follow(client: LeaseholdClient, query: AuditQuery, seenFirst: readonly AuditEvent[], intervalMs: number, show: (items: readonly AuditEvent[]) => void): Promise<void> {
  const seen = new Set(seenFirst.map((e) => e.id));
  // Rows can land with a time a little before the newest one already printed
  // (batched writers), so each poll looks back a second and skips what it printed.
  let since = seenFirst[0]?.time ?? query.since ?? new Date().toISOString();
  let stopped = false;
  const stop = (): void => {
    stopped = true;
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  while (!stopped) {
    await new Promise((r) => setTimeout(r, intervalMs));
    if (stopped) break;
    const from = new Date(Date.parse(since) - 1000).toISOString();
    const settled = new Date(Date.now() - SETTLE_MS).toISOString();
    const fresh: AuditEvent[] = [];
    let cursor: string | undefined;
    do {
      const page = await client.listAudit({ ...query, since: from, limit: 1000, ...(cursor ? { cursor } : {}) });
      for (const e of page.items) if (!seen.has(e.id) && e.time <= settled) fresh.push(e);
      cursor = page.next_cursor ?? undefined;
    } while (cursor !== undefined);
    fresh.reverse(); // the API answers newest first; the sort below is stable, so ties keep the trail's order
    fresh.sort((a, b) => (a.time < b.time ? -1 : a.time > b.time ? 1 : 0));
    for (const e of fresh) {
      seen.add(e.id);
      if (e.time > since) since = e.time;
    }
    show(fresh);
  }
}
