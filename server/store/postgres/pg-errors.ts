/**
 * Which PostgreSQL faults mean "the store cannot answer safely": anything
 * from the connection (no SQLSTATE: refused, reset, terminated, timed out)
 * and the server-side classes that are about availability rather than the
 * statement (08 connection, 40 transaction rollback, 53 resources,
 * 55P03 lock timeout, 57 operator intervention / statement timeout).
 */

import pg from 'pg';
import { StoreUnavailableError } from '../types';

const UNAVAILABLE_CLASSES = ['08', '40', '53', '57'];

export function isUnavailable(e: unknown): boolean {
  if (e instanceof StoreUnavailableError) return true;
  if (!(e instanceof pg.DatabaseError)) return true;
  const code = e.code ?? '';
  return UNAVAILABLE_CLASSES.includes(code.slice(0, 2)) || code === '55P03';
}

/** A StoreUnavailableError for an availability fault; any other error unchanged. */
export function toStoreError(e: unknown, maybeCommitted: boolean): unknown {
  if (e instanceof StoreUnavailableError) return e;
  if (isUnavailable(e)) return new StoreUnavailableError(`postgres: ${(e as Error)?.message ?? String(e)}`, maybeCommitted);
  return e;
}
