/**
 * `force-release` and `revoke`: read the lease, show it, ask for the
 * resource name unless `--yes`, then send the fencing token that was shown
 * (or `--token`) as the expected one. If the route changed hands in between,
 * the server answers `lease_mismatch` and the successor is untouched (exit 3).
 * `request-release` does the same without the confirmation: it ends nothing.
 */

import type { Command } from 'commander';
import { isLeaseholdError, type LeaseholdClient, type LeaseView } from '../../lib/client/index';
import { CliError, EXIT } from '../errors';
import { jsonLine, styleFor } from '../format';
import { readLine } from '../prompt';
import { clientFor, example, note, positiveInt, print, reasonOption, withConnection, withJson, type CommonOptions } from '../common';
import { leaseTable } from './leases';

interface ActionOptions extends CommonOptions {
  reason: string;
  token?: number;
  yes?: boolean;
  closeSession?: boolean;
  skipLockDelay?: boolean;
}

type Act = (client: LeaseholdClient, route: string, expected: number, opts: ActionOptions) => Promise<Record<string, unknown>>;

const DONE: Record<string, string> = { 'force-release': 'Force-released', revoke: 'Revoked', 'request-release': 'Asked the holder to release' };

/**
 * An action on the lease shown: `ending` ones (force-release, revoke) ask
 * for confirmation unless `--yes` and take `--skip-lock-delay`; a release
 * request only asks, so it shows the lease and sends at once.
 */
function operatorCommand(program: Command, name: string, description: string, act: Act, ending = true): Command {
  let cmd = program
    .command(name)
    .description(description)
    .argument('<route>', 'e.g. lease://acme/renderers/doc-1')
    .addOption(reasonOption())
    .option('--token <n>', 'the fencing token you expect (default: the one shown)', positiveInt);
  if (ending) {
    cmd = cmd
      .option('--skip-lock-delay', "no lock-delay after this end (the old holder is known dead): the route is free at once (docs/policies.md)")
      .option('-y, --yes', 'do not ask for confirmation');
  }
  return withJson(withConnection(cmd), 'print the result as JSON').action(async (route: string, opts: ActionOptions) => {
    const client = clientFor(opts);
    const lease = await client.inspectOrThrow(route).catch((e: unknown) => {
      throw isLeaseholdError(e, 'lease_not_found') ? new CliError(`no lease is held on ${route}; nothing was done`, EXIT.conflict, e) : e;
    });
    const expected = opts.token ?? lease.fencing_token;
    // Shown even with --yes: a scripted run's log then records what was removed.
    process.stderr.write(leaseTable([lease], styleFor(process.stderr)));
    if (expected !== lease.fencing_token) note(`(you gave --token ${expected}; the lease shown has ${lease.fencing_token})`);
    const others = opts.closeSession ? await otherLeases(client, lease) : undefined;
    if (others !== undefined) {
      note(`--close-session: its holder's session (incarnation ${lease.holder_incarnation}) ${others === 0 ? 'holds no other lease' : `also holds ${leases(others)}, released with it`}`);
    }
    if (ending && !opts.yes) await confirm(name, lease);
    try {
      const result = await act(client, route, expected, opts);
      if (opts.json) print(jsonLine(result));
      else print(`${DONE[name] ?? name} ${route} (fencing token ${expected})${opts.closeSession ? sessionOutcome(result, others) : ''}.\n`);
    } catch (e) {
      if (isLeaseholdError(e, 'lease_mismatch') || isLeaseholdError(e, 'lease_not_found')) {
        // With --token the operator typed the token: nothing was shown that could have changed.
        const what = opts.token !== undefined ? `the lease on ${route} does not have the fencing token you gave (--token ${expected})` : `${route} changed since it was shown (expected fencing token ${expected})`;
        throw new CliError(`${what}; nothing was done: ${e.message}`, EXIT.conflict, e);
      }
      throw e;
    }
  });
}

/** Asks for the resource name (the route's last segment) of the lease shown. */
async function confirm(name: string, lease: LeaseView): Promise<void> {
  const resource = lease.route.slice(lease.route.lastIndexOf('/') + 1);
  const answer = await readLine(`${name} this lease? Type its resource name (${resource}) to confirm: `);
  if (answer?.trim() !== resource) throw new CliError('not confirmed; nothing was done', EXIT.error);
}

/**
 * How many other leases the lease's session holds (`revoke --close-session`
 * releases them too), listed by holder incarnation under each of the
 * token's grants: closing the session needs admin on every one of them, so
 * a revoke that succeeds could read them all. Undefined (with a note) if
 * they cannot be counted: the revoke itself goes ahead.
 */
async function otherLeases(client: LeaseholdClient, lease: LeaseView): Promise<number | undefined> {
  try {
    const routes = new Set<string>();
    for (const grant of (await client.whoami()).grants) {
      const selector = grant.slice(0, grant.lastIndexOf('#'));
      for await (const l of client.list(selector, { holderIncarnation: lease.holder_incarnation, pageSize: 1000 })) routes.add(l.route);
    }
    routes.delete(lease.route);
    return routes.size;
  } catch (e) {
    note(`(could not count the other leases of its session: ${e instanceof Error ? e.message : String(e)})`);
    return undefined;
  }
}

function leases(n: number): string {
  return n === 0 ? 'no other lease' : `${n} other lease${n === 1 ? '' : 's'}`;
}

/** What `revoke --close-session` did to the holder's session, for the line printed when done. */
function sessionOutcome(result: Record<string, unknown>, others: number | undefined): string {
  if (result.sessions_closed !== 1) return "; its holder's session was already closed";
  if (others === undefined) return "; closed its holder's session, which released its other leases";
  return others === 0 ? "; closed its holder's session, which held no other lease" : `; closed its holder's session, which released its ${leases(others)}`;
}

/** `--skip-lock-delay` sends `lock_delay_ms: 0`; without it the policy's delay applies. */
function lockDelay(opts: ActionOptions): { lockDelayMs?: number } {
  return opts.skipLockDelay ? { lockDelayMs: 0 } : {};
}

export function registerOperator(program: Command): void {
  example(
    operatorCommand(program, 'force-release', 'free a stuck lease (admin): shows it, asks for confirmation, and sends the token shown', (client, route, expected, opts) =>
      client.forceRelease(route, { reason: opts.reason, expectedFencingToken: expected, ...lockDelay(opts) }),
    ),
    "leasehold force-release lease://acme/renderers/doc-1 --reason 'renderer hung after drain, OPS-1234'",
  );
  example(
    operatorCommand(program, 'revoke', 'revoke a lease for security reasons (admin), optionally closing the holder\'s session', (client, route, expected, opts) =>
      client.revoke(route, { reason: opts.reason, expectedFencingToken: expected, ...lockDelay(opts), ...(opts.closeSession ? { closeSession: true } : {}) }),
    ).option('--close-session', "also close the holder's session (every lease it holds is released)"),
    "leasehold revoke lease://acme/renderers/doc-1 --reason 'credential leaked, SEC-77' --close-session",
  );
  example(
    operatorCommand(
      program,
      'request-release',
      'ask the holder to let go (write or admin): shows the lease and sends the token shown; the holder finishes, checkpoints and releases',
      (client, route, expected, opts) => client.requestRelease(route, { reason: opts.reason, expectedFencingToken: expected }),
      false,
    ),
    "leasehold request-release lease://acme/renderers/doc-1 --reason 'draining renderer-7 for a kernel update'",
  );
}
