/**
 * The React part of the SDK (`leasehold/react`): a hook over the inventory
 * observer and a ready-made live inventory widget (style it with
 * `leasehold/widget.css`). Browser-safe; imports only react and the client.
 */

export { useLeaseInventory } from './use-lease-inventory';
export type { LeaseInventory, UseLeaseInventoryOptions } from './use-lease-inventory';
export { LeaseholdProvider, useLeaseholdClient } from './provider';
export type { LeaseholdProviderProps } from './provider';
export { InventoryWidget } from './inventory-widget';
export type { InventoryWidgetProps } from './inventory-widget';
