/** `ls` and `show`: what is held, as a table or as JSON. */

import type { Command } from 'commander';
import type { AuditEvent, LeaseView } from '../../lib/client/index';
import { jsonLine, relative, shortDuration, styleFor, table, type Style } from '../format';
import { clientFor, example, note, positiveInt, print, withConnection, withJson, type CommonOptions } from '../common';

interface LsOptions extends CommonOptions {
  owner?: string;
  incarnation?: string;
  limit?: number;
  all?: boolean;
}

export const LEASE_HEADER = ['ROUTE', 'OWNER', 'INCARNATION', 'TOKEN', 'EXPIRES', 'RENEWALS', 'WAITERS'];

export function leaseRow(l: LeaseView, now = Date.now()): string[] {
  return [l.route, l.owner_id, l.holder_incarnation, String(l.fencing_token), relative(l.expires_at, now), String(l.renewal_count), String(l.waiters)];
}

export function leaseTable(items: readonly LeaseView[], style: Style): string {
  return table(LEASE_HEADER, items.map((l) => leaseRow(l)), style, new Set([3, 5, 6]));
}

/** OWNER and FENCING TOKEN are the lease's holder and incarnation; ACTOR is the token that made the call (`tokens ls` names it). */
export const AUDIT_HEADER = ['TIME', 'EVENT', 'RESULT', 'ROUTE', 'OWNER', 'FENCING TOKEN', 'ACTOR', 'REASON'];

/** An audit event as table cells, its time already formatted. */
export function auditRow(e: AuditEvent, time: string): string[] {
  return [time, e.event_type, e.result, e.route ?? '-', e.owner_id ?? '-', e.fencing_token === null ? '-' : String(e.fencing_token), e.token_id ?? '-', e.reason ?? ''];
}

export function auditTable(items: readonly AuditEvent[], style: Style, now = Date.now()): string {
  return table(AUDIT_HEADER, items.map((e) => auditRow(e, relative(e.time, now))), style);
}

export function registerLeases(program: Command): void {
  example(
    withJson(
      withConnection(
        program
          .command('ls')
          .description('held leases matching a selector, a page at a time (--all fetches every page, lazily)')
          .argument('<selector>', "a route or selector, e.g. 'lease://acme/renderers/*' or 'lease://acme/**'")
          .option('--owner <owner>', 'only leases of this owner id')
          .option('--incarnation <id>', 'only leases of this holder incarnation (one session)')
          .option('--limit <n>', 'leases per page (default 100, at most 1000)', positiveInt)
          .option('--all', 'every matching lease, not just the first page'),
      ),
    ).action(async (selector: string, opts: LsOptions) => {
      const client = clientFor(opts);
      const filter = { ownerId: opts.owner, holderIncarnation: opts.incarnation };
      const style = styleFor(process.stdout);
      // On stderr, so that stdout stays a bare table (or no JSON at all).
      const noneMatch = (): void => {
        const filters = [opts.owner !== undefined ? `--owner ${opts.owner}` : '', opts.incarnation !== undefined ? `--incarnation ${opts.incarnation}` : ''].filter(Boolean);
        note(`(no held lease matches ${selector}${filters.length > 0 ? ` with ${filters.join(' ')}` : ''})`);
      };
      if (opts.all) {
        const items: LeaseView[] = [];
        let n = 0;
        for await (const lease of client.list(selector, { ...filter, pageSize: opts.limit ?? 500 })) {
          n++;
          if (opts.json) print(jsonLine(lease));
          else items.push(lease);
        }
        if (!opts.json) print(leaseTable(items, style));
        if (n === 0) noneMatch();
        return;
      }
      const page = await client.listPage(selector, { ...filter, limit: opts.limit ?? 100 });
      if (opts.json) for (const lease of page.items) print(jsonLine(lease));
      else print(leaseTable(page.items, style));
      if (page.items.length === 0) noneMatch();
      if (page.next_cursor !== null) note(`(more leases match: --all lists every one)`);
    }),
    "leasehold ls 'lease://acme/renderers/*'",
    "leasehold ls 'lease://acme/**' --owner renderer-7 --all --json",
  );

  example(
    withJson(
      withConnection(
        program
          .command('show')
          .description('one lease: every field, its checkpoint, and its last audit events')
          .argument('<route>', 'e.g. lease://acme/renderers/doc-1')
          .option('--events <n>', 'how many audit events (default 10)', positiveInt),
      ),
    ).action(async (route: string, opts: CommonOptions & { events?: number }) => {
      const client = clientFor(opts);
      const [lease, checkpoint, audit] = await Promise.all([client.inspect(route), client.readCheckpoint(route), client.listAudit({ route, limit: opts.events ?? 10 })]);
      const delayUntil = lease === undefined ? await client.lockDelayUntil(route) : undefined;
      if (opts.json) {
        const lockDelayUntil = delayUntil === undefined ? null : new Date(delayUntil).toISOString();
        return print(jsonLine({ route, lease: lease ?? null, lock_delay_until: lockDelayUntil, checkpoint: checkpoint ?? null, audit: audit.items }));
      }
      const style = styleFor(process.stdout);
      const now = Date.now();
      const rows: string[][] = [['route', route]];
      if (lease === undefined) {
        rows.push(['lease', 'not held']);
        if (delayUntil !== undefined) rows.push(['lock-delay', `no new holder until ${new Date(delayUntil).toISOString()} (${relative(new Date(delayUntil).toISOString(), now)})`]);
      }
      else {
        rows.push(
          ['owner', lease.owner_id],
          ['incarnation', lease.holder_incarnation],
          ['fencing token', String(lease.fencing_token)],
          ['acquired', `${lease.acquired_at} (${relative(lease.acquired_at, now)})`],
          ['renewed', `${lease.renewed_at} (${relative(lease.renewed_at, now)})`],
          ['expires', `${lease.expires_at} (${relative(lease.expires_at, now)}; ttl ${shortDuration(lease.ttl_ms)})`],
          ['max expiry', `${lease.max_expires_at} (${relative(lease.max_expires_at, now)})`],
          ['renewals', String(lease.renewal_count)],
          ['waiters', String(lease.waiters)],
          ['revision', String(lease.revision)],
          ['metadata', lease.metadata === null ? '-' : JSON.stringify(lease.metadata)],
          ['release request', lease.release_request === null ? 'none' : `${lease.release_request.reason} (asked ${relative(lease.release_request.requested_at, now)} by ${lease.release_request.token_id})`],
        );
      }
      rows.push(['checkpoint', checkpoint === undefined ? 'none' : `v${checkpoint.version} by token ${checkpoint.fencing_token}, ${relative(checkpoint.written_at, now)}: ${JSON.stringify(checkpoint.value)}`]);
      print(table(['FIELD', 'VALUE'], rows, style));
      print(`\n${style.bold('Last audit events')}\n`);
      print(audit.items.length === 0 ? '(none)\n' : auditTable(audit.items, style, now));
    }),
    'leasehold show lease://acme/renderers/doc-1',
  );
}
