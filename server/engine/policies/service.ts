/**
 * The policy service (`engine.policies`): set, delete, list a family's
 * policies and read the one that applies to a route. It owns the family's
 * cap on policies (docs/policies.md, docs/design.md "Engine map").
 */

import { contains, selectorOrThrow, type ParsedSelector } from '@/lib/selector';
import type { PolicyRow } from '../../store/types';
import { fail } from '../core/errors';
import type { Caller, Principal } from '../core/model';
import type { Json } from '../core/views';
import { spec, type Runner } from '../runner';
import { assertLiveChain } from '../tokens/tokens';
import { boundsOf, checkFields, limitsView, POLICIES_PER_FAMILY, policySelector, policyView, type LimitsView, type PolicyCache, type PolicyFields, type PolicyView } from './policies';

/** A policy's values as its audit events record them (`details`): the fields of its view, without the selector and the update stamp. */
function policyValues(r: PolicyRow): Record<string, Json> {
  const { selector: _selector, updated_at: _at, updated_by: _by, ...values } = policyView(r);
  return values;
}

export class PolicyService {
  constructor(
    private readonly r: Runner,
    private readonly cache: PolicyCache,
  ) {}

  /** Create or replace the policy of exactly this selector (the caller checked `admin` on it). */
  async set(p: Caller, selector: string, fields: PolicyFields, reason: string): Promise<{ policy: PolicyView }> {
    const sel = policySelector(selector);
    checkFields(fields, this.r.ctx.limits);
    return this.r.run(
      async (step) => {
        await assertLiveChain(step.tx, p, step.now);
        const existing = (await step.tx.policies.listPolicies(p.family)).some((r) => r.selector === sel.selector);
        if (!existing && (await step.tx.policies.countPolicies(p.family)) >= POLICIES_PER_FAMILY) {
          fail('rate_limited', `a family has at most ${POLICIES_PER_FAMILY} policies`, { retryable: false });
        }
        const row = { family: p.family, selector: sel.selector, ...fields, updatedAt: step.now, updatedBy: p.tokenId };
        await step.tx.policies.putPolicy(row);
        step.events.push({ type: 'policy_changed', family: p.family });
        step.facts.details = policyValues(row);
        return { policy: policyView(row) };
      },
      // The audit event's route is the selector and its details the values set; the reason is the caller's, verbatim.
      spec(p, 'policy_set', sel.selector, 'policy_set', { inTx: true, reason }),
    );
  }

  /** Delete the policy of exactly this selector, or `not_found`. */
  async delete(p: Caller, selector: string, reason: string): Promise<Record<string, never>> {
    const sel = policySelector(selector);
    return this.r.run(
      async (step) => {
        await assertLiveChain(step.tx, p, step.now);
        const existing = (await step.tx.policies.listPolicies(p.family)).find((r) => r.selector === sel.selector);
        if (!existing || !(await step.tx.policies.deletePolicy(p.family, sel.selector))) fail('not_found', 'no policy has exactly this selector');
        step.events.push({ type: 'policy_changed', family: p.family });
        step.facts.details = policyValues(existing);
        return {};
      },
      // Like set: the selector is the route, the values the deleted policy had are the details.
      spec(p, 'policy_delete', sel.selector, 'policy_deleted', { inTx: true, reason }),
    );
  }

  /** The family's policies whose selector the given one contains, by selector. */
  async list(p: Principal, within: ParsedSelector): Promise<{ items: PolicyView[] }> {
    return this.r.run(async (step) => {
      const rows = await step.tx.policies.listPolicies(p.family);
      return { items: rows.filter((r) => contains(within.triple, selectorOrThrow(r.selector).triple)).map(policyView) };
    }, undefined, p.family);
  }

  /** The policy that applies to a route now and the bounds it results in. */
  async effective(p: Principal, route: string): Promise<{ policy: PolicyView | null; limits: LimitsView }> {
    return this.r.run(async (step) => {
      const policy = await this.cache.policyFor(step.tx, p.family, route);
      return { policy: policy ? policyView(policy) : null, limits: limitsView(boundsOf(policy, this.r.ctx.limits)) };
    }, undefined, p.family);
  }
}
