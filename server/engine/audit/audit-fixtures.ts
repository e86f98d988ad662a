/**
 * What the audit tests share (audit.test.ts, audit-retention.test.ts): the
 * whole-family selector, an operator's reason, a buffered session_open
 * event, the family's events and a force-release's input.
 */

import { selectorOrThrow } from '@/lib/selector';
import type { EngineFixture } from '../../testing/engine-fixture';
import { rid } from '../../testing/harness';
import { requestDigest } from '../core/ids';
import type { AuditEvent } from './audit';

export const ALL_SEL = selectorOrThrow('lease://**');
export const REASON = 'operator test: stuck after deploy';

/** A session_open event as the engine would buffer it. */
export function sessionEvent(f: EngineFixture, ownerId: string, time = f.clock.now()) {
  return {
    time,
    eventType: 'session_open',
    family: 'default',
    route: null,
    tokenId: null,
    subjectTokenId: null,
    ownerId,
    incarnation: null,
    result: 'session_opened',
    fencingToken: null,
    reason: null,
    correlationId: `c-${ownerId}`,
    latencyMs: 0,
  };
}

/** Every audit event of the family, newest first (one page of up to 1,000). */
export async function allEvents(f: EngineFixture): Promise<AuditEvent[]> {
  return (await f.engine.audit.list(f.admin, { selector: ALL_SEL, limit: 1_000 })).items;
}

/** A force-release's input with the operator's reason. */
export function forceBody(token: number, requestId = rid()) {
  return { requestId, reason: REASON, expectedFencingToken: token, digest: requestDigest({ reason: REASON, expected_fencing_token: token }) };
}
