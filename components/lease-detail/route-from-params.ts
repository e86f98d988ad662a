import { parseRoute, SCHEME } from '@/lib/selector';

export interface RouteParams {
  realm: string;
  area: string;
  resource: string;
}

type ParsedRouteParams =
  | { ok: true; route: string; segments: [string, string, string] }
  | { ok: false; route: string; reason: string };

/**
 * The lease route a detail URL `/leases/{realm}/{area}/{resource}` names,
 * checked against the grammar. Next hands the segments over decoded once, as
 * the API does (docs/semantics.md "The wire"); they are not decoded again, so
 * `a%253A` stays the invalid `a%3A` and never becomes another route, `a:`.
 */
export function routeFromParams(params: RouteParams): ParsedRouteParams {
  const route = `${SCHEME}${[params.realm, params.area, params.resource].join('/')}`;
  const parsed = parseRoute(route);
  return parsed.ok ? { ok: true, route, segments: parsed.value.segments } : { ok: false, route, reason: parsed.reason };
}

/** The console URL of a route's detail page, each segment encoded; undefined for anything that is not a route (an audited selector). */
export function leaseDetailHref(route: string): string | undefined {
  const r = parseRoute(route);
  return r.ok ? `/leases/${r.value.segments.map(encodeURIComponent).join('/')}` : undefined;
}
