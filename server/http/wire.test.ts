/**
 * The answer schemas describe exactly the views lib/wire declares (the SDK's
 * and the console's types): checked by the compiler, so a field added to one
 * and not the other fails `tsc`, and this test names where.
 */

import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { z } from 'zod';
import { CHANGE_KINDS, STORE_KINDS, type HeldLease as WireHeldLease, type LeaseView as WireLeaseView, type ReleaseRequest as WireReleaseRequest, type SessionView as WireSessionView } from '@/lib/wire';
import { FeedEvents, HealthOk, HealthUnavailable, HeldLease, LeaseView, ReleaseRequestView, SessionView } from './answers';

/** True when A and B are assignable both ways (readonly modifiers aside). */
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;

test('the answer schemas describe exactly the lease, session and release-request views of lib/wire', () => {
  const checks: [
    Same<z.output<typeof LeaseView>, WireLeaseView>,
    Same<z.output<typeof HeldLease>, WireHeldLease>,
    Same<z.output<typeof SessionView>, WireSessionView>,
    Same<z.output<typeof ReleaseRequestView>, WireReleaseRequest>,
  ] = [true, true, true, true];
  assert.deepEqual(checks, [true, true, true, true]);
});

test('the feed and health schemas take their kinds from lib/wire', () => {
  assert.deepEqual(FeedEvents.change.shape.change.options, [...CHANGE_KINDS]);
  assert.deepEqual(HealthOk.shape.store.options, [...STORE_KINDS]);
  assert.deepEqual(HealthUnavailable.shape.store.options, [...STORE_KINDS]);
});
