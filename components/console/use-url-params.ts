'use client';

import { usePathname, useSearchParams } from 'next/navigation';
import { useCallback, useState } from 'react';

type ParamPatch = Record<string, string | null | undefined>;

/**
 * The page's query string as state: a view's filters and cursor live in the
 * URL so it can be shared. `set` merges a patch (empty or null removes a
 * parameter); `push` adds a history entry (paging), the default replaces it.
 */
export function useUrlParams() {
  const params = useSearchParams();
  const pathname = usePathname();
  const set = useCallback(
    (patch: ParamPatch, opts: { push?: boolean } = {}) => {
      const next = new URLSearchParams(params.toString());
      for (const [k, v] of Object.entries(patch)) {
        if (v === null || v === undefined || v === '') next.delete(k);
        else next.set(k, v);
      }
      const qs = next.toString();
      const href = qs ? `${pathname}?${qs}` : pathname;
      // The browser's own history (Next's router follows it: useSearchParams
      // updates, Back and Forward work), not router.replace: a view's query
      // is client state, so a keystroke in a filter must not fetch the page
      // from the server again and re-render its metadata, which left the
      // document without a <title> for a moment (docs/console.md "View state in the URL").
      // `null` state is what Next's router listens for.
      if (opts.push) window.history.pushState(null, '', href);
      else window.history.replaceState(null, '', href);
    },
    [params, pathname],
  );
  return { params, set };
}

/**
 * Previous goes back through the cursors seen (docs/console.md). The trail is the
 * cursors of the pages visited under one filter, first page as `null`; the
 * current cursor comes from the URL, so the browser's own Back keeps it
 * consistent. A shared link that starts mid-way goes back to the first page.
 * Changing `filterKey` starts a new trail.
 */
export function useCursorTrail(filterKey: string, cursor: string | null, go: (cursor: string | null) => void) {
  const [state, setState] = useState<{ key: string; trail: Array<string | null> }>({ key: filterKey, trail: [null] });
  const trail = state.key === filterKey ? state.trail : [null];
  const at = trail.indexOf(cursor);
  const upToHere = at >= 0 ? trail.slice(0, at + 1) : [null, cursor];
  return {
    /** 1-based page number when known (not for a link that started mid-way). */
    page: at >= 0 ? at + 1 : undefined,
    hasPrevious: cursor !== null,
    next(nextCursor: string) {
      setState({ key: filterKey, trail: [...upToHere, nextCursor] });
      go(nextCursor);
    },
    previous() {
      go(upToHere.length >= 2 ? (upToHere[upToHere.length - 2] ?? null) : null);
      if (at < 0) setState({ key: filterKey, trail: upToHere });
    },
  };
}
