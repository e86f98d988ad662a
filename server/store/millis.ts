/**
 * Time in whole epoch milliseconds, branded: the one type backend time has
 * from the clock to the store, where every time column is an integer
 * (`bigint` on PostgreSQL, INTEGER on SQLite). A plain `number` is not a
 * `Millis`: the only ways in are `millis()` (which refuses a non-integer),
 * a clock (`Date.now` is integral) and the arithmetic helpers below, so a
 * fractional millisecond (say, local time plus a measured clock offset) can
 * not reach a time column. docs/design.md "Time".
 */

export type Millis = number & { readonly __millis: true };

/** A clock of whole milliseconds. */
export type Clock = () => Millis;

/** `n` as Millis; throws RangeError if it is not a safe integer (a bug upstream, never rounded away silently). */
export function millis(n: number): Millis {
  if (!Number.isSafeInteger(n)) throw new RangeError(`not a whole number of milliseconds: ${n}`);
  return n as Millis;
}

/** The local clock (`Date.now()` is whole milliseconds). */
export const systemClock: Clock = () => Date.now() as Millis;

/** `t + ms` (a duration in whole milliseconds). */
export function addMs(t: Millis, ms: number): Millis {
  return millis(t + ms);
}
