/**
 * `policies ls|set|rm|explain`: per-pattern policies (docs/policies.md).
 * `set` replaces the selector's whole policy: a field not given is null
 * (the global limit applies), as the API does.
 */

import { InvalidArgumentError, type Command } from 'commander';
import type { EffectivePolicy, Policy, PolicyFields } from '../../lib/client/index';
import { jsonLine, relative, shortDuration, styleFor, table } from '../format';
import { clientFor, durationArg, example, note, print, reasonOption, withConnection, withJson, type CommonOptions } from '../common';

/** The policy fields, their option, help and wire name, in table order. */
const FIELDS = [
  { key: 'ttlMinMs', attr: 'ttlMin', wire: 'ttl_min_ms', flag: 'ttl-min', header: 'TTL MIN', help: 'shortest TTL a lease gets (1s to 10m)' },
  { key: 'ttlMaxMs', attr: 'ttlMax', wire: 'ttl_max_ms', flag: 'ttl-max', header: 'TTL MAX', help: 'longest TTL a lease gets (1s to 10m)' },
  { key: 'ttlDefaultMs', attr: 'ttlDefault', wire: 'ttl_default_ms', flag: 'ttl-default', header: 'TTL DEFAULT', help: 'TTL of an acquire that asks for none (inside the bounds)' },
  { key: 'maxLifetimeMs', attr: 'maxLifetime', wire: 'max_lifetime_ms', flag: 'max-lifetime', header: 'MAX LIFETIME', help: "default and cap of a lease's lifetime (1s to 1d)" },
  { key: 'lockDelayMs', attr: 'lockDelay', wire: 'lock_delay_ms', flag: 'lock-delay', header: 'LOCK DELAY', help: 'how long the route stays closed after an involuntary end (0 to 60s)' },
] as const;

function cell(ms: number | null): string {
  if (ms === null) return '-';
  return ms % 1000 === 0 ? shortDuration(ms) : `${ms}ms`;
}

function policyRow(p: Policy, now: number): string[] {
  return [p.selector, ...FIELDS.map((f) => cell(p[f.wire])), p.max_waiters === null ? '-' : String(p.max_waiters), relative(p.updated_at, now), p.updated_by];
}

export function policyTable(items: readonly Policy[]): string {
  const now = Date.now();
  return table(['SELECTOR', ...FIELDS.map((f) => f.header), 'MAX WAITERS', 'UPDATED', 'BY'], items.map((p) => policyRow(p, now)), styleFor(process.stdout), new Set([6]));
}

function explainTable(route: string, e: EffectivePolicy): string {
  const from = (wire: (typeof FIELDS)[number]['wire'] | 'max_waiters'): string => (e.policy === null || e.policy[wire] === null ? 'global' : 'policy');
  const rows = [
    ...FIELDS.map((f) => [f.wire, cell(e.limits[f.wire]), from(f.wire)]),
    ['max_lifetime_default_ms', cell(e.limits.max_lifetime_default_ms), from('max_lifetime_ms')],
    ['max_waiters', String(e.limits.max_waiters), from('max_waiters')],
  ];
  const head = e.policy === null ? `${route}: no policy applies; the global limits do.\n` : `${route}: policy ${e.policy.selector} applies (set ${relative(e.policy.updated_at)} by ${e.policy.updated_by}).\n`;
  return head + table(['FIELD', 'VALUE', 'FROM'], rows, styleFor(process.stdout));
}

function nonNegativeInt(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0) throw new InvalidArgumentError('a whole number, 0 or more');
  return n;
}

type SetOptions = CommonOptions & { reason: string; maxWaiters?: number } & Partial<Record<(typeof FIELDS)[number]['attr'], number>>;

export function registerPolicies(program: Command): void {
  const policies = program.command('policies').description('per-pattern policies: TTL bounds, lifetime caps, lock-delay, waiter caps');
  example(policies, 'leasehold policies ls', "leasehold policies explain lease://db/eu/primary");

  example(
    withJson(
      withConnection(
        policies
          .command('ls')
          .description('the policies whose selector lies within a selector (default every one)')
          .argument('[selector]', "e.g. 'lease://db/**'", 'lease://**'),
      ),
    ).action(async (within: string, opts: CommonOptions) => {
      const items = await clientFor(opts).policies.list(within);
      if (opts.json) {
        for (const p of items) print(jsonLine(p));
        return;
      }
      if (items.length === 0) return note(`no policies within ${within}`);
      print(policyTable(items));
    }),
    'leasehold policies ls',
    "leasehold policies ls 'lease://db/**' --json",
  );

  let set = policies
    .command('set')
    .description("create or replace the policy of exactly this selector (admin); fields not given are unset (the global limit applies)")
    .argument('<selector>', "e.g. 'lease://db/**'")
    .addOption(reasonOption());
  for (const f of FIELDS) set = set.option(`--${f.flag} <duration>`, f.help, durationArg);
  set = set.option('--max-waiters <n>', 'how many acquires may queue for one route (0 to 1024)', nonNegativeInt);
  example(
    withJson(withConnection(set), 'print the stored policy as JSON').action(async (selector: string, opts: SetOptions) => {
      const fields: PolicyFields & { reason: string } = { reason: opts.reason };
      for (const f of FIELDS) {
        const v = opts[f.attr];
        if (v !== undefined) fields[f.key] = v;
      }
      if (opts.maxWaiters !== undefined) fields.maxWaiters = opts.maxWaiters;
      const policy = await clientFor(opts).policies.set(selector, fields);
      if (opts.json) return print(jsonLine(policy));
      print(policyTable([policy]));
    }),
    "leasehold policies set 'lease://db/**' --ttl-min 10s --ttl-max 60s --lock-delay 15s --max-waiters 8 --reason 'primaries survive a GC pause'",
  );

  example(
    withConnection(
      policies
        .command('rm')
        .alias('delete')
        .description('delete the policy of exactly this selector (admin)')
        .argument('<selector>', "e.g. 'lease://db/**'")
        .addOption(reasonOption()),
    ).action(async (selector: string, opts: CommonOptions & { reason: string }) => {
      await clientFor(opts).policies.delete(selector, { reason: opts.reason });
      note(`Deleted the policy of ${selector}`);
    }),
    "leasehold policies rm 'lease://db/**' --reason 'moved to per-region policies, OPS-9'",
  );

  example(
    withJson(withConnection(policies.command('explain').description('which policy applies to a route, and the bounds its leases get').argument('<route>', 'e.g. lease://db/eu/primary')), 'print the policy and the limits as JSON').action(
      async (route: string, opts: CommonOptions) => {
        const effective = await clientFor(opts).policies.explain(route);
        if (opts.json) return print(jsonLine(effective));
        print(explainTable(route, effective));
      },
    ),
    'leasehold policies explain lease://db/eu/primary',
  );
}
