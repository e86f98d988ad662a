/** API paths the SDK calls, with route segments encoded (docs/semantics.md "The wire"). */

import { parseRoute } from '../selector';
import { LeaseholdError } from './errors';

export type LeaseAction = 'acquire' | 'renew' | 'release' | 'checkpoint' | 'force-release' | 'revoke' | 'release-request';

/** `/api/v1/leases/{realm}/{area}/{resource}[/{action}]`; a route that fails the grammar is refused locally. */
export function leasePath(route: string, action?: LeaseAction): string {
  const base = `/api/v1/leases/${routeSegments(route)}`;
  return action === undefined ? base : `${base}/${action}`;
}

/** `/api/v1/policies/effective/{realm}/{area}/{resource}`; a route that fails the grammar is refused locally. */
export function effectivePolicyPath(route: string): string {
  return `/api/v1/policies/effective/${routeSegments(route)}`;
}

function routeSegments(route: string): string {
  const parsed = parseRoute(route);
  if (!parsed.ok) {
    // Refused before sending: the server's code for the same refusal, but not the server's answer.
    throw new LeaseholdError({ code: 'invalid_request', message: `${JSON.stringify(route)} is not a valid route: it ${parsed.reason}`, fromServer: false });
  }
  return parsed.value.segments.map(encodeURIComponent).join('/');
}

export function streamSubscriptionsPath(streamId: string, subscriptionId?: string): string {
  const base = `/api/v1/inventory/streams/${encodeURIComponent(streamId)}/subscriptions`;
  return subscriptionId === undefined ? base : `${base}/${encodeURIComponent(subscriptionId)}`;
}
