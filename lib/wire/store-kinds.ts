/**
 * The SQL engines a server can run on, as health answers name them
 * (docs/api.md "Health"). A third engine is one more name here plus its
 * files under server/store/ and one line in server/store/factory.ts.
 */

export const STORE_KINDS = ['sqlite', 'postgres'] as const;

export type StoreKind = (typeof STORE_KINDS)[number];

/** True when `v` names a store kind. */
export function isStoreKind(v: unknown): v is StoreKind {
  return typeof v === 'string' && (STORE_KINDS as readonly string[]).includes(v);
}
