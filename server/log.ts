/**
 * The process's logger: pino, writing JSON lines (for a log pipeline) or
 * readable lines (for a person at a terminal). Every line carries `time`,
 * `level`, `instance` and `message` (docs/operations.md, "Logs").
 *
 * Pretty lines are formatted in this thread by pino-pretty's formatter and
 * written synchronously: no transport, so no worker thread to bundle and no
 * line lost when the process exits right after writing it.
 */

import { pino, stdTimeFunctions, destination as sonicDestination, type DestinationStream, type LevelWithSilent } from 'pino';
import { prettyFactory } from 'pino-pretty';
import type { LogFields, Logger } from './engine/core/logger';

type LogFormat = 'json' | 'pretty';
type LogLevel = LevelWithSilent;

interface LogSettings {
  format: LogFormat;
  level: LogLevel;
  /** This process's instance id, on every line. */
  instance: string;
  /** A file descriptor (stdout by default), a file path (appended to), or a stream. */
  destination?: number | string | { write(line: string): unknown };
  /** Pretty format only: colours (default: when the destination is a terminal). */
  colorize?: boolean;
}

export interface ServerLog {
  logger: Logger;
  /** Write out anything buffered (call before `process.exit`). */
  flush(): void;
  /** Fatal lines, for the last thing a process says before it exits. */
  fatal(message: string, fields?: LogFields): void;
}

type Sink = { write(line: string): unknown; flushSync?(): void };

function sink(dest: LogSettings['destination'], sync: boolean): Sink {
  if (dest !== undefined && typeof dest === 'object') return dest;
  // Asynchronous writes batch naturally under load (one write per burst, not
  // per line); `flush()` empties the buffer before an exit.
  return sonicDestination({ dest: dest ?? 1, sync, append: true, mkdir: true });
}

/** The logger over pino, in the given format and level. */
export function createLog(s: LogSettings): ServerLog {
  let out: Sink;
  let stream: DestinationStream;
  if (s.format === 'pretty') {
    out = sink(s.destination, true);
    const isTty = s.destination === undefined || s.destination === 1 ? process.stdout.isTTY === true : false;
    const prettify = prettyFactory({
      colorize: s.colorize ?? isTty,
      messageKey: 'message',
      translateTime: 'SYS:yyyy-mm-dd HH:MM:ss.l',
      ignore: 'pid,hostname',
      singleLine: true,
    });
    stream = { write: (line: string) => void out.write(prettify(line)) };
  } else {
    out = sink(s.destination, false);
    stream = out as DestinationStream;
  }
  const p = pino(
    {
      level: s.level,
      base: { instance: s.instance },
      messageKey: 'message',
      // ISO time and level names in JSON (what a pipeline and `jq` read
      // best); pino-pretty reads pino's numeric levels and epoch times.
      timestamp: s.format === 'json' ? stdTimeFunctions.isoTime : stdTimeFunctions.epochTime,
      formatters: s.format === 'json' ? { level: (label) => ({ level: label }) } : undefined,
    },
    stream,
  );
  const logger: Logger = {
    debug: (message, fields) => (fields ? p.debug(fields, message) : p.debug(message)),
    info: (message, fields) => (fields ? p.info(fields, message) : p.info(message)),
    warn: (message, fields) => (fields ? p.warn(fields, message) : p.warn(message)),
    error: (message, fields) => (fields ? p.error(fields, message) : p.error(message)),
    enabled: (level) => p.isLevelEnabled(level),
  };
  return {
    logger,
    fatal: (message, fields) => (fields ? p.fatal(fields, message) : p.fatal(message)),
    flush() {
      try {
        out.flushSync?.();
      } catch {
        // Nothing more can be written (the reader is gone).
      }
    },
  };
}

/** The default format: readable lines on a terminal, JSON lines otherwise. */
export function defaultLogFormat(isTty: boolean | undefined = process.stdout.isTTY): LogFormat {
  return isTty ? 'pretty' : 'json';
}
