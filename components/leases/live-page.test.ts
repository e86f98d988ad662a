/**
 * The leases table's live rows (docs/console.md /leases): the LIST snapshot with
 * the feed's later changes applied; a new route joins the page only inside
 * its bounds, otherwise it counts toward the "new leases" badge.
 */

import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { ChangeEvent, LeasePage, LeaseView } from '@/lib/client';
import { derivePage, mergeRenewal, type Renewal } from './live-page';

const NO_FILTER = { owner: '', holder: '' };
const NONE = new Map<string, Renewal>();

function lease(route: string, over: Partial<LeaseView> = {}): LeaseView {
  return {
    route,
    owner_id: 'worker-1',
    holder_incarnation: 'inc-1',
    fencing_token: 1,
    acquired_at: '2026-11-29T10:00:00.000Z',
    renewed_at: '2026-11-29T10:00:00.000Z',
    expires_at: '2026-11-29T10:01:00.000Z',
    max_expires_at: '2026-11-29T11:00:00.000Z',
    ttl_ms: 60_000,
    remaining_ms: 60_000,
    renewal_count: 0,
    revision: 1,
    metadata: null,
    waiters: 0,
    release_request: null,
    ...over,
  };
}

function page(routes: string[], next: string | null, revision = 10): LeasePage {
  return { items: routes.map((r) => lease(r)), next_cursor: next, revision, epoch: 'e1' };
}

function acquired(route: string, revision: number, over: Partial<LeaseView> = {}): ChangeEvent {
  return { type: 'change', selector: 'lease://acme/**', route, change: 'acquired', revision, lease: lease(route, { revision, ...over }) };
}

function released(route: string, revision: number): ChangeEvent {
  return { type: 'change', selector: 'lease://acme/**', route, change: 'released', revision };
}

const routes = (p: { rows: readonly LeaseView[] }) => p.rows.map((r) => r.route);

test('a route acquired inside the page bounds joins the page in route order', () => {
  const p = page(['lease://acme/a/1', 'lease://acme/a/5'], 'cursor-2');
  const live = derivePage(p, [acquired('lease://acme/a/3', 11)], NONE, NO_FILTER, true);
  assert.deepEqual(routes(live), ['lease://acme/a/1', 'lease://acme/a/3', 'lease://acme/a/5']);
  assert.equal(live.newElsewhere, 0);
  assert.equal(live.revision, 11);
});

test('a route that sorts past a page that has a next page only raises the new-leases count', () => {
  const p = page(['lease://acme/a/1', 'lease://acme/a/5'], 'cursor-2');
  const live = derivePage(p, [acquired('lease://acme/a/9', 11)], NONE, NO_FILTER, true);
  assert.deepEqual(routes(live), ['lease://acme/a/1', 'lease://acme/a/5']);
  assert.equal(live.newElsewhere, 1);
});

test('on the last page anything after its first route joins; before it, on a later page, it does not', () => {
  const p = page(['lease://acme/b/1', 'lease://acme/b/5'], null);
  const live = derivePage(p, [acquired('lease://acme/z/9', 11), acquired('lease://acme/a/1', 12)], NONE, NO_FILTER, false);
  assert.deepEqual(routes(live), ['lease://acme/b/1', 'lease://acme/b/5', 'lease://acme/z/9']);
  assert.equal(live.newElsewhere, 1);
});

test('a release removes the row, and a release of an elsewhere route takes it off the count', () => {
  const p = page(['lease://acme/a/1', 'lease://acme/a/5'], 'c');
  const live = derivePage(p, [acquired('lease://acme/a/9', 11), released('lease://acme/a/1', 12), released('lease://acme/a/9', 13)], NONE, NO_FILTER, true);
  assert.deepEqual(routes(live), ['lease://acme/a/5']);
  assert.equal(live.newElsewhere, 0);
});

test('changes the snapshot already holds are not applied twice', () => {
  const p = page(['lease://acme/a/1'], null, 20);
  const live = derivePage(p, [released('lease://acme/a/1', 20), acquired('lease://acme/a/2', 19)], NONE, NO_FILTER, true);
  assert.deepEqual(routes(live), ['lease://acme/a/1']);
  assert.equal(live.revision, 20);
});

test('a re-acquisition replaces the row with the new holder and token', () => {
  const p = page(['lease://acme/a/1'], null);
  const live = derivePage(p, [released('lease://acme/a/1', 11), acquired('lease://acme/a/1', 12, { fencing_token: 7, owner_id: 'worker-2' })], NONE, NO_FILTER, true);
  assert.equal(live.rows[0]?.fencing_token, 7);
  assert.equal(live.rows[0]?.owner_id, 'worker-2');
});

test('the owner filter keeps other owners out, and a row taken over by another owner leaves', () => {
  const p = page(['lease://acme/a/1'], null);
  const live = derivePage(p, [acquired('lease://acme/a/2', 11, { owner_id: 'other' }), acquired('lease://acme/a/1', 12, { owner_id: 'other' })], NONE, { owner: 'worker-1', holder: '' }, true);
  assert.deepEqual(routes(live), []);
  assert.equal(live.newElsewhere, 0);
});

test('renewal hints move expiry forward and never back', () => {
  const p = page(['lease://acme/a/1'], null);
  let renewals = mergeRenewal(NONE, { type: 'renewed', selector: 's', route: 'lease://acme/a/1', expires_at: '2026-11-29T10:02:00.000Z', renewal_count: 3 });
  renewals = mergeRenewal(renewals, { type: 'renewed', selector: 's', route: 'lease://acme/a/1', expires_at: '2026-11-29T10:01:30.000Z', renewal_count: 2 });
  const live = derivePage(p, [], renewals, NO_FILTER, true);
  assert.equal(live.rows[0]?.expires_at, '2026-11-29T10:02:00.000Z');
  assert.equal(live.rows[0]?.renewal_count, 3);
});

test('an empty later page has no known bounds, so new routes only count', () => {
  const p = page([], null);
  const live = derivePage(p, [acquired('lease://acme/a/1', 11)], NONE, NO_FILTER, false);
  assert.deepEqual(routes(live), []);
  assert.equal(live.newElsewhere, 1);
});

test('the on-call filters keep out changes that do not match: expiry past the window, no waiters, no release request', () => {
  const p = page([], null);
  const events = [
    acquired('lease://acme/a/1', 11, { expires_at: '2026-11-29T10:00:20.000Z', waiters: 2 }),
    acquired('lease://acme/a/2', 12, { expires_at: '2026-11-29T10:05:00.000Z', waiters: 2 }),
    acquired('lease://acme/a/3', 13, { expires_at: '2026-11-29T10:00:20.000Z', waiters: 0 }),
  ];
  const expiresBy = Date.parse('2026-11-29T10:00:30.000Z');
  assert.deepEqual(routes(derivePage(p, events, NONE, { ...NO_FILTER, expiresBy }, true)), ['lease://acme/a/1', 'lease://acme/a/3']);
  assert.deepEqual(routes(derivePage(p, events, NONE, { ...NO_FILTER, expiresBy, withWaiters: true }, true)), ['lease://acme/a/1']);
  assert.deepEqual(routes(derivePage(p, events, NONE, { ...NO_FILTER, releaseRequested: true }, true)), []);
});

test('a renewal that moves a listed lease past the expiring-soon window takes it off the page', () => {
  const p: LeasePage = { ...page([], null), items: [lease('lease://acme/a/1', { expires_at: '2026-11-29T10:00:20.000Z' })] };
  const renewals = mergeRenewal(NONE, { type: 'renewed', selector: 's', route: 'lease://acme/a/1', expires_at: '2026-11-29T10:01:20.000Z', renewal_count: 1 });
  const expiresBy = Date.parse('2026-11-29T10:00:30.000Z');
  assert.deepEqual(routes(derivePage(p, [], NONE, { ...NO_FILTER, expiresBy }, true)), ['lease://acme/a/1']);
  assert.deepEqual(routes(derivePage(p, [], renewals, { ...NO_FILTER, expiresBy }, true)), []);
});
