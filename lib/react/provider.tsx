'use client';

import { createContext, useContext, type ReactElement, type ReactNode } from 'react';
import type { LeaseholdClient } from '../client';

const LeaseholdContext = createContext<LeaseholdClient | undefined>(undefined);

export interface LeaseholdProviderProps {
  client: LeaseholdClient;
  children?: ReactNode;
}

/**
 * Makes `client` the default for `useLeaseInventory` and `<InventoryWidget>`
 * below it, so one client (one connection budget, one credential) serves the
 * whole tree.
 */
export function LeaseholdProvider({ client, children }: LeaseholdProviderProps): ReactElement {
  // `.Provider`, not React 19's `<Context value>`: the package supports React 18.
  return <LeaseholdContext.Provider value={client}>{children}</LeaseholdContext.Provider>;
}

/** The client of the nearest `<LeaseholdProvider>`, or undefined outside one. */
export function useLeaseholdClient(): LeaseholdClient | undefined {
  return useContext(LeaseholdContext);
}
