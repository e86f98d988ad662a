/**
 * The wire vocabulary (docs/semantics.md "The wire"), declared once for the
 * server, the SDK (bundled into it: no Node built-ins, relative imports
 * only), the console and the metrics.
 */

export { CHANGE_KINDS, ENDING_KINDS, isEnding, type ChangeKind, type EndingKind } from './change-kinds';
export { STORE_KINDS, isStoreKind, type StoreKind } from './store-kinds';
export type { HeldLease, LeaseView, Metadata, ReleaseRequest, SessionView } from './views';
