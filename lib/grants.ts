/**
 * Grants: `selector#permission` (docs/semantics.md §10). A request is allowed only
 * if ONE grant's selector contains the request's whole match set and its
 * permission implies the one needed; grants are never unioned.
 */

import { contains, parseSelector, type GrammarResult, type Triple } from './selector';

export type Permission = 'read' | 'write' | 'admin';

export interface Grant {
  /** The grant as given, e.g. `lease://acme/**#read`. */
  readonly text: string;
  readonly selector: string;
  readonly triple: Triple;
  readonly permission: Permission;
}

const RANK: Record<Permission, number> = { read: 1, write: 2, admin: 3 };

/** `admin` implies `write` and `read`; `write` implies `read`. */
export function implies(have: Permission, need: Permission): boolean {
  return RANK[have] >= RANK[need];
}

export function parseGrant(text: string): GrammarResult<Grant> {
  if (typeof text !== 'string') return { ok: false, reason: 'a grant must be a string' };
  const hash = text.lastIndexOf('#');
  if (hash < 0) return { ok: false, reason: 'a grant is selector#permission' };
  const permission = text.slice(hash + 1);
  if (permission !== 'read' && permission !== 'write' && permission !== 'admin') {
    return { ok: false, reason: 'permission must be read, write or admin' };
  }
  const sel = parseSelector(text.slice(0, hash));
  if (!sel.ok) return { ok: false, reason: `selector ${sel.reason}` };
  return { ok: true, value: { text, selector: sel.value.selector, triple: sel.value.triple, permission } };
}

/** The grant that allows `need` on everything `target` matches, if any. */
export function allowingGrant(grants: readonly Grant[], target: Triple, need: Permission): Grant | undefined {
  return grants.find((g) => implies(g.permission, need) && contains(g.triple, target));
}
