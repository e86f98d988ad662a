/**
 * `await using` support: the method is installed under `Symbol.asyncDispose`,
 * or, on runtimes that predate it, under `Symbol.for('Symbol.asyncDispose')`,
 * the key that TypeScript's and esbuild's down-levelled `using` fall back to
 * then (never both: lowered code looks for one or the other).
 */

export function installAsyncDispose(proto: { dispose(): Promise<void> }): void {
  const key = (Symbol as { asyncDispose?: symbol }).asyncDispose ?? Symbol.for('Symbol.asyncDispose');
  Object.defineProperty(proto, key, {
    value: function (this: { dispose(): Promise<void> }) {
      return this.dispose();
    },
    configurable: true,
    writable: true,
  });
}
