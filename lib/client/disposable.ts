/**
 * `await using` support on runtimes that predate `Symbol.asyncDispose`: the
 * method is also installed under `Symbol.for('Symbol.asyncDispose')`, the key
 * that TypeScript's and esbuild's down-levelled `using` fall back to.
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
