'use client';

import { useCallback, useEffect, useMemo, useState, useSyncExternalStore } from 'react';
import type { InventoryObserver, InventorySnapshot, LeaseholdClient, LeaseholdError, LeaseView, ObserveOptions, ObserverRecovery, ObserverState } from '../client';
import { useLeaseholdClient } from './provider';

export interface UseLeaseInventoryOptions extends ObserveOptions {
  /** The client to observe with; defaults to the one of the nearest `<LeaseholdProvider>`. */
  client?: LeaseholdClient;
}

export interface LeaseInventory {
  readonly state: ObserverState;
  /** The observed leases, ordered by route. While `stale`, the last known ones. */
  readonly items: readonly LeaseView[];
  /** Why the observer stopped, when `state` is `error`. */
  readonly error: LeaseholdError | undefined;
  /** True while the observer reconnects (`resyncing`): `items` may be out of date. */
  readonly stale: boolean;
  /** How the observer last came back after its stream ended: `resumed` or `relisted` (docs/sdk.md). */
  readonly recovery?: ObserverRecovery | undefined;
}

/**
 * What the server renders, and what a component shows until its observer
 * exists: nothing observed yet. One frozen object, so React sees a stable
 * snapshot.
 */
const CONNECTING: InventorySnapshot = Object.freeze({ state: 'connecting', recovery: undefined, items: Object.freeze([]), error: undefined, version: 0 });

const getConnecting = (): InventorySnapshot => CONNECTING;
const noSubscription = (): (() => void) => () => undefined;

interface Observation {
  readonly client: LeaseholdClient;
  readonly selector: string;
  readonly observer: InventoryObserver;
}

/**
 * The live, read-only set of leases matching `selector` (advisory: see
 * `observeInventory`). The observer is created in an effect and closed when
 * the component unmounts or the client or selector changes, so a server
 * render opens no stream and StrictMode's double effects close the first
 * observer before the second reports anything. Other options are read when
 * the observer is created; changing them alone does not restart it.
 *
 * The client must keep its identity across renders (create it once, not
 * inline in JSX): a new client is a new key, hence a new stream.
 */
export function useLeaseInventory(selector: string, options: UseLeaseInventoryOptions = {}): LeaseInventory {
  const { client: explicit, ...observeOptions } = options;
  const fromContext = useLeaseholdClient();
  const client = explicit ?? fromContext;
  if (client === undefined) {
    throw new Error('useLeaseInventory needs a client: pass options.client or render inside <LeaseholdProvider client={…}>');
  }

  const [observation, setObservation] = useState<Observation | undefined>(undefined);
  useEffect(() => {
    const observer = client.observeInventory(selector, observeOptions);
    setObservation({ client, selector, observer });
    return () => observer.close();
    // Keyed by (client, selector) only: the other options are read here, at creation.
  }, [client, selector]);

  // Between a change of client or selector and the effect that follows it,
  // the held observer belongs to the previous key (and is closed): show
  // `connecting`, never the old selector's items or its `closed` state.
  const observer = observation?.client === client && observation.selector === selector ? observation.observer : undefined;
  const subscribe = useCallback((onChange: () => void) => (observer ? observer.subscribe(onChange) : noSubscription()), [observer]);
  const getSnapshot = useCallback(() => (observer ? observer.getSnapshot() : CONNECTING), [observer]);
  const snapshot = useSyncExternalStore(subscribe, getSnapshot, getConnecting);

  return useMemo(
    // The observer's snapshot is already ordered by route (byte order).
    () => ({ state: snapshot.state, items: snapshot.items, error: snapshot.error, stale: snapshot.state === 'resyncing', recovery: snapshot.recovery }),
    [snapshot],
  );
}
