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
    const lease = await client.inspect(route);
    if (lease === undefined) throw new CliError(`no lease is held on ${route}`, EXIT.conflict);
    const expected = opts.token ?? lease.fencing_token;
    if (!ending) process.stderr.write(leaseTable([lease], styleFor(process.stderr)));
    else if (!opts.yes) await confirm(name, lease, expected);
    try {
      const result = await act(client, route, expected, opts);
      if (opts.json) print(jsonLine(result));
      else print(`${DONE[name] ?? name} ${route} (fencing token ${expected}).\n`);
    } catch (e) {
      if (isLeaseholdError(e, 'lease_mismatch') || isLeaseholdError(e, 'lease_not_found')) {
        throw new CliError(`${route} changed since it was shown (expected fencing token ${expected}); nothing was done: ${e.message}`, EXIT.conflict);
      }
      throw e;
    }
  });
}

/** Shows the lease on stderr and asks for its resource name (the route's last segment). */
async function confirm(name: string, lease: LeaseView, expected: number): Promise<void> {
  const resource = lease.route.slice(lease.route.lastIndexOf('/') + 1);
  process.stderr.write(leaseTable([lease], styleFor(process.stderr)));
  if (expected !== lease.fencing_token) note(`(you gave --token ${expected}; the lease shown has ${lease.fencing_token})`);
  const answer = await readLine(`${name} this lease? Type its resource name (${resource}) to confirm: `);
  if (answer?.trim() !== resource) throw new CliError('not confirmed; nothing was done', EXIT.error);
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
