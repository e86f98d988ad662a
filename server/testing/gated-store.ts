import type { Store } from '../store/types';

/**
 * A store whose next steps can be held after they commit, to open a race
 * window on purpose (a grant whose client left, a rollback): `hold()` returns
 * the function that releases them.
 */
export function gatedStore(inner: Store): Store & { hold(): () => void } {
  let gate: Promise<void> | undefined;
  return Object.assign(Object.create(inner) as Store, {
    atomic: async <T>(fn: Parameters<Store['atomic']>[0]) => {
      const v = (await inner.atomic(fn)) as T;
      if (gate) await gate;
      return v;
    },
    hold() {
      let open!: () => void;
      gate = new Promise<void>((r) => (open = r));
      return () => {
        gate = undefined;
        open();
      };
    },
  });
}
