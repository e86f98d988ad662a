/**
 * What every command shares: the connection options, `--json`, a help
 * example, and option parsers that turn a bad value into a usage error.
 */

import { Command, InvalidArgumentError, Option } from 'commander';
import { connect, type ConnectionOptions } from './connection';
import { parseDuration } from './format';
import type { LeaseholdClient } from '../lib/client/index';

export interface CommonOptions extends ConnectionOptions {
  json?: boolean;
}

/** `--url` and `--token-file` on a command that talks to the server. */
export function withConnection(cmd: Command): Command {
  return cmd
    .option('--url <url>', 'the server, e.g. http://127.0.0.1:3000 (default: LEASEHOLD_URL, then the saved login)')
    .option('--token-file <path>', 'read the bearer token from this file (default: LEASEHOLD_TOKEN, then the saved login)');
}

/** `--json` on a command that reads. */
export function withJson(cmd: Command, what = 'print JSON (one document per line for lists) instead of a table'): Command {
  return cmd.option('--json', what);
}

/** The example `--help` shows under a command. */
export function example(cmd: Command, ...lines: string[]): Command {
  return cmd.addHelpText('after', `\nExample${lines.length > 1 ? 's' : ''}:\n${lines.map((l) => `  $ ${l}`).join('\n')}\n`);
}

export function clientFor(opts: ConnectionOptions): LeaseholdClient {
  return connect(opts);
}

export function durationArg(value: string): number {
  const ms = parseDuration(value);
  if (ms === undefined) throw new InvalidArgumentError('a duration such as 500ms, 30s, 5m, 2h or 1d');
  return ms;
}

export function positiveInt(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n <= 0) throw new InvalidArgumentError('a positive whole number');
  return n;
}

/** A required `--reason` of 10 to 500 characters, checked before anything is read or sent. */
export function reasonOption(): Option {
  return new Option('--reason <text>', 'why (10 to 500 characters; kept in the audit trail)').makeOptionMandatory().argParser((v: string) => {
    const n = [...v].length;
    if (n < 10 || n > 500) throw new InvalidArgumentError(`10 to 500 characters (this one has ${n})`);
    return v;
  });
}

export function print(text: string): void {
  process.stdout.write(text);
}

export function note(text: string): void {
  process.stderr.write(`${text}\n`);
}
