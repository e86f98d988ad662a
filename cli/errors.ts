/**
 * How the command line ends (docs/cli.md "Exit codes"): 0 success, 1 error,
 * 2 usage, 3 conflict or mismatch (held by someone else, token changed),
 * 4 lease lost. `run` otherwise exits with its child's code.
 */

import { isLeaseholdError, type LeaseholdError } from '../lib/client/index';

export const EXIT = { ok: 0, error: 1, usage: 2, conflict: 3, lost: 4 } as const;

/**
 * A failure the command line reports itself, with the exit code it means.
 * When it rewords an API refusal, `cause` is that refusal: its code and
 * correlation id are still printed, since they are what an operator quotes.
 */
export class CliError extends Error {
  readonly exitCode: number;
  constructor(message: string, exitCode: number = EXIT.error, cause?: LeaseholdError) {
    super(message, cause === undefined ? undefined : { cause });
    this.name = 'CliError';
    this.exitCode = exitCode;
  }
}

const USAGE_CODES: ReadonlySet<string> = new Set(['invalid_config', 'invalid_request', 'invalid_selector', 'cursor_invalid']);
const CONFLICT_CODES: ReadonlySet<string> = new Set(['lease_conflict', 'lease_mismatch']);

/** The exit code for anything a command threw. */
export function exitCodeFor(e: unknown): number {
  if (e instanceof CliError) return e.exitCode;
  if (isLeaseholdError(e)) {
    if (USAGE_CODES.has(e.code)) return EXIT.usage;
    if (CONFLICT_CODES.has(e.code)) return EXIT.conflict;
    if (e.code === 'lease_lost' || e.code === 'session_lost') return EXIT.lost;
  }
  return EXIT.error;
}

/** The line for stderr: the API's message, its code and the correlation id to quote. */
export function describeError(e: unknown): string {
  const api = isLeaseholdError(e) ? e : e instanceof CliError && isLeaseholdError(e.cause) ? e.cause : undefined;
  if (api !== undefined && e instanceof Error) {
    const extra = [api.code, api.correlationId ? `correlation id ${api.correlationId}` : undefined].filter(Boolean).join(', ');
    return `leasehold: ${e.message} (${extra})`;
  }
  if (e instanceof Error) return `leasehold: ${e.message}`;
  return `leasehold: ${String(e)}`;
}
