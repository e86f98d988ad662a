/**
 * What the parts of a PostgreSQL step (pg-policies.ts, pg-change-log.ts,
 * pg-waiters.ts) use of its transaction, PgTx (pg-tx.ts), which builds
 * them: named statements and the waiter bookkeeping. A file of its own, so
 * they never import pg-tx.ts (no import cycle in server/, see
 * docs/design.md "Engine map").
 */

export interface PgRun {
  run<R>(name: string, text: string, values: unknown[]): Promise<R[]>;
}

export interface PgWaiterTx extends PgRun {
  noWaiters(family: string): boolean;
  queuedIn(family: string): void;
}
