import type { Store } from '../store/types';

/**
 * A store whose next family steps can be held after they commit, to open a
 * race window on purpose (a grant whose client left, a rollback): `hold()`
 * returns the function that releases them. Only steps of a family (leases,
 * sessions, waiters: `StepScope.family`) are held; steps without one
 * (authenticating a token whose 1 s cache entry ran out on a loaded
 * machine, audit writes) pass, so the step a test means to hold is never
 * stuck behind a held step it needs first.
 */
export function gatedStore(inner: Store): Store & { hold(): () => void } {
  let gate: Promise<void> | undefined;
  return Object.assign(Object.create(inner) as Store, {
    atomic: async <T>(fn: Parameters<Store['atomic']>[0], scope?: Parameters<Store['atomic']>[1]) => {
      const v = (await inner.atomic(fn, scope)) as T;
      if (gate && scope?.family !== undefined) await gate;
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
