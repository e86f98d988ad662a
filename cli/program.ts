/**
 * The `leasehold` command line (docs/cli.md), built on the SDK and on
 * commander, which writes every `--help` and refuses unknown options and
 * missing arguments (exit 2).
 */

import { Command, CommanderError } from 'commander';
import { registerAccount } from './commands/account';
import { registerAudit } from './commands/audit';
import { registerLeases } from './commands/leases';
import { registerOperator } from './commands/operator';
import { registerPolicies } from './commands/policies';
import { registerRun } from './commands/run';
import { registerTokens } from './commands/tokens';
import { registerWatch } from './commands/watch';
import { describeError, EXIT, exitCodeFor } from './errors';

declare const LEASEHOLD_VERSION: string | undefined;

export function buildProgram(): Command {
  const program = new Command('leasehold')
    .description('Leasehold on the command line: leases, the audit trail, tokens, policies, and `run` to hold a lease while a command runs.')
    .version(typeof LEASEHOLD_VERSION === 'string' ? LEASEHOLD_VERSION : 'dev')
    .enablePositionalOptions()
    .showHelpAfterError('(add --help for usage)')
    .exitOverride();
  program.addHelpText(
    'after',
    `
Connection: --url and --token-file, else LEASEHOLD_URL and LEASEHOLD_TOKEN, else \`leasehold login\`.
Exit codes: 0 success, 1 error, 2 usage, 3 conflict or mismatch, 4 lease lost (run: otherwise the command's code).`,
  );
  registerAccount(program);
  registerLeases(program);
  registerWatch(program);
  registerOperator(program);
  registerAudit(program);
  registerTokens(program);
  registerPolicies(program);
  registerRun(program);
  return program;
}

/** Runs the command line on `argv` (as process.argv); resolves with the exit code. */
export async function main(argv: readonly string[]): Promise<number> {
  const program = buildProgram();
  try {
    await program.parseAsync([...argv]);
    return typeof process.exitCode === 'number' ? process.exitCode : EXIT.ok;
  } catch (e) {
    if (e instanceof CommanderError) {
      // commander has printed the message (or the help, or the version) already.
      return e.exitCode === 0 ? EXIT.ok : EXIT.usage;
    }
    process.stderr.write(`${describeError(e)}\n`);
    return exitCodeFor(e);
  }
}
