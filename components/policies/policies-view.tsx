'use client';

import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { isLeaseholdError, type EffectivePolicy, type Policy } from '@/lib/client';
import { parseRoute } from '@/lib/selector';
import { consoleClient } from '@/components/console/client';
import { queryKeys } from '@/components/query-keys';
import { draftErrors, draftNumbers, EMPTY_DRAFT, NUMBER_FIELDS, type PolicyDraft } from '@/components/policies/policy-form';
import { Button } from '@/components/ui/button';
import { controlVariants, describedBy, Field } from '@/components/ui/field';
import { DeniedPanel, EmptyState, ErrorAlert, SkeletonRows } from '@/components/ui/states';
import { Table, TBody, Td, Th, THead } from '@/components/ui/table';
import { useUrlParams } from '@/components/console/use-url-params';
import { formatMillis } from '@/components/ui/duration';
import { ShortId } from '@/components/ui/short-id';
import { Timestamp } from '@/components/ui/timestamp';
import { useNow } from '@/components/ui/use-now';

const COLS = 9;
const show = (v: number | null) => (v === null ? '—' : v.toLocaleString('en-US'));

/** A span as people say it ("1h", "250 ms"), the exact milliseconds on hover; "—" when unset (the global limit). */
function Span({ ms }: { ms: number | null }) {
  if (ms === null) return <span title="Unset: the global limit">—</span>;
  return <span title={`${ms.toLocaleString('en-US')} ms`}>{formatMillis(ms)}</span>;
}

/** Policies whose selector contains the filter text (any case). */
function filterPolicies(policies: readonly Policy[], text: string): Policy[] {
  const needle = text.trim().toLowerCase();
  return needle ? policies.filter((p) => p.selector.toLowerCase().includes(needle)) : [...policies];
}

/** The family's policies: list, create, edit, delete (with a reason), and which one applies to a route. */
export function PoliciesView() {
  const queryClient = useQueryClient();
  const query = useQuery({ queryKey: queryKeys.policies(), queryFn: () => consoleClient().policies.list(), retry: (n, e) => !isLeaseholdError(e) && n < 1 });
  const [draft, setDraft] = useState<PolicyDraft | undefined>();
  const [deleting, setDeleting] = useState<Policy | undefined>();
  const refresh = () => queryClient.invalidateQueries({ queryKey: queryKeys.policies() });
  const { params, set } = useUrlParams();
  // The box answers each key at once; the URL (`?selector=`) follows, so a filtered view can be shared
  // (lease detail's "Open in Policies" links here with the applying policy's selector and the route).
  const [filter, setFilter] = useState(() => params.get('selector') ?? '');
  const shown = query.data && filterPolicies(query.data, filter);
  const now = useNow();

  return (
    <div className="space-y-8">
      <div className="flex flex-wrap items-end justify-between gap-3">
        <form role="search" aria-label="Filter policies" className="w-full sm:w-80" onSubmit={(e) => e.preventDefault()}>
          <label htmlFor="policies-filter" className="mb-1.5 block text-sm font-medium text-zinc-800 dark:text-zinc-200">
            Filter by selector
          </label>
          <input
            id="policies-filter"
            type="search"
            value={filter}
            placeholder="e.g. db/"
            autoComplete="off"
            spellCheck={false}
            onChange={(e) => {
              setFilter(e.target.value);
              set({ selector: e.target.value.trim() });
            }}
            className={controlVariants({ mono: true })}
          />
        </form>
        <Button variant="primary" onClick={() => setDraft({ ...EMPTY_DRAFT })}>
          New policy
        </Button>
      </div>
      {draft && <PolicyForm initial={draft} onDone={() => (setDraft(undefined), void refresh())} onCancel={() => setDraft(undefined)} />}
      {deleting && <DeleteForm policy={deleting} onDone={() => (setDeleting(undefined), void refresh())} onCancel={() => setDeleting(undefined)} />}
      {query.error && !query.data ? (
        isLeaseholdError(query.error, 'access_denied') ? <DeniedPanel error={query.error} what="list policies" /> : <ErrorAlert error={query.error} title="Policies could not be loaded" />
      ) : query.data && query.data.length === 0 ? (
        <EmptyState title="No policies">Every route gets the global bounds. Add one with New policy.</EmptyState>
      ) : shown && shown.length === 0 ? (
        <EmptyState title="No matching policies">
          No selector contains <span className="font-mono">{filter.trim()}</span>.{' '}
          <button
            type="button"
            className="font-medium text-teal-700 underline-offset-2 hover:underline dark:text-teal-400"
            onClick={() => {
              setFilter('');
              set({ selector: null });
            }}
          >
            Show every policy
          </button>
        </EmptyState>
      ) : (
        <Table aria-label="Policies">
          <THead>
            <tr>
              <Th>Selector</Th>
              <Th>TTL min / max</Th>
              <Th>Default TTL</Th>
              <Th>Max lifetime</Th>
              <Th>Lock-delay</Th>
              <Th>Max waiters</Th>
              <Th>Updated</Th>
              <Th>Updated by</Th>
              <Th>
                <span className="sr-only">Actions</span>
              </Th>
            </tr>
          </THead>
          <TBody>
            {!shown ? (
              <SkeletonRows cols={COLS} />
            ) : (
              shown.map((p) => (
                <tr key={p.selector}>
                  <Td className="font-mono">{p.selector}</Td>
                  <Td className="whitespace-nowrap tabular-nums">
                    <Span ms={p.ttl_min_ms} /> / <Span ms={p.ttl_max_ms} />
                  </Td>
                  <Td className="tabular-nums">
                    <Span ms={p.ttl_default_ms} />
                  </Td>
                  <Td className="tabular-nums">
                    <Span ms={p.max_lifetime_ms} />
                  </Td>
                  <Td className="tabular-nums">
                    <Span ms={p.lock_delay_ms} />
                  </Td>
                  <Td className="tabular-nums">{show(p.max_waiters)}</Td>
                  <Td className="whitespace-nowrap">
                    <Timestamp at={p.updated_at} now={now} />
                  </Td>
                  <Td>
                    <ShortId id={p.updated_by} copyLabel="Copy token id" />
                  </Td>
                  <Td className="space-x-2 whitespace-nowrap">
                    <Button size="sm" aria-label={`Edit ${p.selector}`} onClick={() => setDraft(draftOf(p))}>
                      Edit
                    </Button>
                    <Button size="sm" aria-label={`Delete ${p.selector}`} onClick={() => setDeleting(p)}>
                      Delete
                    </Button>
                  </Td>
                </tr>
              ))
            )}
          </TBody>
        </Table>
      )}
      <RouteBox initial={params.get('route') ?? ''} />
    </div>
  );
}

function draftOf(p: Policy): PolicyDraft {
  const t = (v: number | null) => (v === null ? '' : String(v));
  return {
    selector: p.selector,
    reason: '',
    ttlMinMs: t(p.ttl_min_ms),
    ttlMaxMs: t(p.ttl_max_ms),
    ttlDefaultMs: t(p.ttl_default_ms),
    maxLifetimeMs: t(p.max_lifetime_ms),
    lockDelayMs: t(p.lock_delay_ms),
    maxWaiters: t(p.max_waiters),
  };
}

function PolicyForm({ initial, onDone, onCancel }: { initial: PolicyDraft; onDone: () => void; onCancel: () => void }) {
  const [d, setD] = useState(initial);
  const [submitted, setSubmitted] = useState(false);
  const errors = draftErrors(d);
  const shown = submitted ? errors : {};
  const save = useMutation({
    mutationFn: () => consoleClient().policies.set(d.selector.trim(), { reason: d.reason.trim(), ...draftNumbers(d) }),
    onSuccess: onDone,
  });
  const text = (key: 'selector' | 'reason', label: string, placeholder: string) => (
    <Field id={`policy-${key}`} label={label} error={shown[key]}>
      <input
        id={`policy-${key}`}
        type="text"
        value={d[key]}
        placeholder={placeholder}
        autoComplete="off"
        spellCheck={false}
        onChange={(e) => setD({ ...d, [key]: e.target.value })}
        aria-invalid={shown[key] ? true : undefined}
        aria-describedby={describedBy(`policy-${key}`, { error: !!shown[key] })}
        className={controlVariants({ invalid: !!shown[key], mono: key === 'selector' })}
      />
    </Field>
  );
  return (
    <form
      noValidate
      aria-label="Policy"
      className="space-y-4 rounded-xl border border-zinc-200 p-5 dark:border-zinc-800"
      onSubmit={(e) => {
        e.preventDefault();
        setSubmitted(true);
        if (Object.keys(errors).length === 0) save.mutate();
      }}
    >
      <div className="grid gap-4 md:grid-cols-2">
        {text('selector', 'Selector', 'lease://db/**')}
        {text('reason', 'Reason', 'why this change (audited)')}
      </div>
      <div className="grid gap-4 md:grid-cols-3">
        {NUMBER_FIELDS.map((f) => (
          <Field key={f.key} id={`policy-${f.key}`} label={f.label} error={shown[f.key]} hint={rangeHint(f)}>
            <div className="flex items-center gap-2">
              <input
                id={`policy-${f.key}`}
                type="number"
                inputMode="numeric"
                min={f.min}
                max={f.max}
                step={1}
                value={d[f.key]}
                onChange={(e) => setD({ ...d, [f.key]: e.target.value })}
                aria-invalid={shown[f.key] ? true : undefined}
                aria-describedby={[describedBy(`policy-${f.key}`, { error: !!shown[f.key], hint: true }), f.wire !== 'max_waiters' && `policy-${f.key}-reading`].filter(Boolean).join(' ')}
                className={controlVariants({ invalid: !!shown[f.key], className: 'tabular-nums' })}
              />
              {f.wire !== 'max_waiters' && <Reading id={`policy-${f.key}`} text={d[f.key]} />}
            </div>
          </Field>
        ))}
      </div>
      {save.error && <ErrorAlert error={save.error} title="The policy was not saved" />}
      <FormButtons label="Save policy" pending={save.isPending} onCancel={onCancel} />
    </form>
  );
}

function DeleteForm({ policy, onDone, onCancel }: { policy: Policy; onDone: () => void; onCancel: () => void }) {
  const [reason, setReason] = useState('');
  const [submitted, setSubmitted] = useState(false);
  const n = [...reason.trim()].length;
  const error = submitted && (n < 10 || n > 500) ? 'Say why, in 10 to 500 characters (it goes to the audit log).' : undefined;
  const del = useMutation({ mutationFn: () => consoleClient().policies.delete(policy.selector, { reason: reason.trim() }), onSuccess: onDone });
  return (
    <form
      noValidate
      aria-label="Delete policy"
      className="space-y-3 rounded-xl border border-red-200 p-5 dark:border-red-900"
      onSubmit={(e) => {
        e.preventDefault();
        setSubmitted(true);
        if (n >= 10 && n <= 500) del.mutate();
      }}
    >
      <p className="text-sm">
        Delete the policy of <span className="font-mono">{policy.selector}</span>? Its routes fall back to the next most specific policy.
      </p>
      <Field id="policy-delete-reason" label="Reason for deleting" error={error}>
        <input id="policy-delete-reason" type="text" value={reason} onChange={(e) => setReason(e.target.value)} className={controlVariants({ invalid: !!error })} />
      </Field>
      {del.error && <ErrorAlert error={del.error} title="The policy was not deleted" />}
      <FormButtons label="Delete policy" pending={del.isPending} onCancel={onCancel} />
    </form>
  );
}

/** Which policy applies to a route, and the bounds its leases get. */
/** Which policy applies to a route; `initial` (the URL's `?route=`) is filled in and explained at once when it is a route. */
function RouteBox({ initial }: { initial: string }) {
  const [route, setRoute] = useState(initial);
  const [asked, setAsked] = useState<string | undefined>(() => {
    const first = initial.trim() ? parseRoute(initial.trim()) : undefined;
    return first?.ok ? first.value.route : undefined;
  });
  const parsed = route.trim() ? parseRoute(route.trim()) : undefined;
  const error = parsed && !parsed.ok ? `Not a route: it ${parsed.reason}.` : undefined;
  const q = useQuery<EffectivePolicy>({ queryKey: [...queryKeys.policies(), 'effective', asked], queryFn: () => consoleClient().policies.explain(asked!), enabled: asked !== undefined });
  return (
    <section aria-label="Explain a route" className="space-y-3 rounded-xl border border-zinc-200 p-5 dark:border-zinc-800">
      <h2 className="text-base font-semibold tracking-tight">Which policy applies?</h2>
      <form
        noValidate
        className="flex items-end gap-2"
        onSubmit={(e) => {
          e.preventDefault();
          if (parsed?.ok) setAsked(parsed.value.route);
        }}
      >
        <Field id="policy-route" label="Route" error={error} className="flex-1">
          <input
            id="policy-route"
            type="text"
            value={route}
            placeholder="lease://db/eu/primary"
            autoComplete="off"
            spellCheck={false}
            onChange={(e) => setRoute(e.target.value)}
            aria-invalid={error ? true : undefined}
            aria-describedby={describedBy('policy-route', { error: !!error })}
            className={controlVariants({ invalid: !!error, mono: true })}
          />
        </Field>
        <Button type="submit">Explain</Button>
      </form>
      {q.error && <ErrorAlert error={q.error} title="Could not explain the route" />}
      {q.data && (
        <dl aria-label="Effective policy" className="grid grid-cols-2 gap-x-6 gap-y-1 text-sm md:grid-cols-4">
          <dt className="text-zinc-500 dark:text-zinc-400">Policy</dt>
          <dd className="font-mono">{q.data.policy?.selector ?? 'none (global bounds)'}</dd>
          <dt className="text-zinc-500 dark:text-zinc-400">TTL</dt>
          <dd className="tabular-nums">
            <Span ms={q.data.limits.ttl_min_ms} /> to <Span ms={q.data.limits.ttl_max_ms} />, default <Span ms={q.data.limits.ttl_default_ms} />
          </dd>
          <dt className="text-zinc-500 dark:text-zinc-400">Max lifetime</dt>
          <dd className="tabular-nums">
            up to <Span ms={q.data.limits.max_lifetime_ms} />, default <Span ms={q.data.limits.max_lifetime_default_ms} />
          </dd>
          <dt className="text-zinc-500 dark:text-zinc-400">Lock-delay</dt>
          <dd className="tabular-nums">
            <Span ms={q.data.limits.lock_delay_ms} />
          </dd>
          <dt className="text-zinc-500 dark:text-zinc-400">Max waiters</dt>
          <dd className="tabular-nums">{q.data.limits.max_waiters}</dd>
        </dl>
      )}
    </section>
  );
}

/** The hint under a number field: its range (in human units for spans); blank means the global limit. */
function rangeHint(f: (typeof NUMBER_FIELDS)[number]): string {
  const range = f.wire === 'max_waiters' ? `${f.min}–${f.max}` : `${f.min}–${f.max} ms (${formatMillis(f.min)} to ${formatMillis(f.max)})`;
  return `${range}; blank: the global limit.`;
}

/** What a milliseconds field says, read as people say it ("= 1h"), beside the input as typed (part of its description). */
function Reading({ id, text }: { id: string; text: string }) {
  const ms = /^\d+$/.test(text.trim()) ? Number(text.trim()) : undefined;
  return (
    <span id={`${id}-reading`} className="min-w-16 text-sm whitespace-nowrap text-zinc-600 tabular-nums dark:text-zinc-400">
      {ms === undefined ? '' : `= ${formatMillis(ms)}`}
    </span>
  );
}

/** A form's submit button (disabled while its request is in flight) and Cancel. */
function FormButtons({ label, pending, onCancel }: { label: string; pending: boolean; onCancel: () => void }) {
  return (
    <div className="flex gap-2">
      <Button type="submit" variant="primary" disabled={pending}>
        {label}
      </Button>
      <Button onClick={onCancel}>Cancel</Button>
    </div>
  );
}
