'use client';

import { useQuery } from '@tanstack/react-query';
import { allowingGrant, parseGrant, type Grant, type Permission } from '@/lib/grants';
import { parseSelector } from '@/lib/selector';
import { isLeaseholdError, type Whoami } from '@/lib/client';
import { consoleClient } from '@/components/console/client';
import { startEarly, takeEarly } from '@/components/console/early';
import { queryKeys } from '@/components/query-keys';

const WHOAMI = 'whoami';

/** Ask who is signed in as soon as this code loads (a console page's first read), not after hydration. */
export function startWhoamiEarly(): void {
  startEarly(WHOAMI, () => consoleClient().whoami());
}

/** Who the login cookie belongs to; `invalid_credential` means signed out. */
export function useWhoami() {
  return useQuery<Whoami>({
    queryKey: queryKeys.whoami(),
    queryFn: () => takeEarly<Whoami>(WHOAMI) ?? consoleClient().whoami(),
    staleTime: 60_000,
    retry: (count, e) => !isLeaseholdError(e, 'invalid_credential') && count < 2,
  });
}

/** The caller's grants, parsed once (a grant that does not parse allows nothing). */
export function parsedGrants(me: Whoami): Grant[] {
  return me.grants.flatMap((g) => {
    const r = parseGrant(g);
    return r.ok ? [r.value] : [];
  });
}

/**
 * Whether the caller may do `need` on everything `selectorOrRoute` matches:
 * one grant must contain it whole (grants never add up; root changes only
 * who may mint tokens, not this). The server decides in the end; this only
 * keeps the console from offering what it would refuse.
 */
export function can(me: Whoami | undefined, selectorOrRoute: string, need: Permission): boolean {
  if (!me) return false;
  const sel = parseSelector(selectorOrRoute);
  if (!sel.ok) return false;
  return allowingGrant(parsedGrants(me), sel.value.triple, need) !== undefined;
}
