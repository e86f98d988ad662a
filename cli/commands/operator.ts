/**
 * `force-release` and `revoke`: read the lease, show it, ask for the
 * resource name unless `--yes`, then send the fencing token that was shown
 * (or `--token`) as the expected one. If the route changed hands in between,
 * the server answers `lease_mismatch` and the successor is untouched (exit 3).
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
}

type Act = (client: LeaseholdClient, route: string, expected: number, opts: ActionOptions) => Promise<Record<string, unknown>>;

function operatorCommand(program: Command, name: string, description: string, act: Act): Command {
  return withJson(
    withConnection(
      program
        .command(name)
        .description(description)
        .argument('<route>', 'e.g. lease://acme/renderers/doc-1')
        .addOption(reasonOption())
        .option('--token <n>', 'the fencing token you expect (default: the one shown)', positiveInt)
        .option('-y, --yes', 'do not ask for confirmation'),
    ),
    'print the result as JSON',
  ).action(async (route: string, opts: ActionOptions) => {
    const client = clientFor(opts);
    const lease = await client.inspect(route);
    if (lease === undefined) throw new CliError(`no lease is held on ${route}`, EXIT.conflict);
    const expected = opts.token ?? lease.fencing_token;
    if (!opts.yes) await confirm(name, lease, expected);
    try {
      const result = await act(client, route, expected, opts);
      if (opts.json) print(jsonLine(result));
      else print(`${name === 'revoke' ? 'Revoked' : 'Force-released'} ${route} (fencing token ${expected}).\n`);
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

export function registerOperator(program: Command): void {
  example(
    operatorCommand(program, 'force-release', 'free a stuck lease (admin): shows it, asks for confirmation, and sends the token shown', (client, route, expected, opts) =>
      client.forceRelease(route, { reason: opts.reason, expectedFencingToken: expected }),
    ),
    "leasehold force-release lease://acme/renderers/doc-1 --reason 'renderer hung after drain, OPS-1234'",
  );
  example(
    operatorCommand(program, 'revoke', 'revoke a lease for security reasons (admin), optionally closing the holder\'s session', (client, route, expected, opts) =>
      client.revoke(route, { reason: opts.reason, expectedFencingToken: expected, ...(opts.closeSession ? { closeSession: true } : {}) }),
    ).option('--close-session', "also close the holder's session (every lease it holds is released)"),
    "leasehold revoke lease://acme/renderers/doc-1 --reason 'credential leaked, SEC-77' --close-session",
  );
}
