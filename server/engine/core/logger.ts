/**
 * The logger the engine and the HTTP layer write to: an interface, so the
 * engine stays free of any logging framework (server/log.ts implements it
 * over pino). Lines are structured: a short fixed message plus fields, never
 * free text with values spliced in, so a log pipeline can filter on them
 * (docs/operations.md, "Logs").
 */

/** A line's fields: JSON values, flat where possible (`correlation_id`, `status`, …). */
export type LogFields = Record<string, unknown>;

export interface Logger {
  debug(message: string, fields?: LogFields): void;
  info(message: string, fields?: LogFields): void;
  warn(message: string, fields?: LogFields): void;
  error(message: string, fields?: LogFields): void;
  /** True when a line at this level would be written (to skip building fields that would be dropped). */
  enabled(level: 'debug' | 'info' | 'warn' | 'error'): boolean;
}

const nothing = () => undefined;

/** A logger that writes nothing: the default where none is injected (engine unit tests). */
export const silentLogger: Logger = { debug: nothing, info: nothing, warn: nothing, error: nothing, enabled: () => false };

/** An error as log fields: its class, message and stack (never its own enumerable fields, which may hold anything). */
export function errorFields(e: unknown): LogFields {
  if (e instanceof Error) return { type: e.name, message: e.message, stack: e.stack ?? '' };
  return { type: typeof e, message: String(e) };
}
