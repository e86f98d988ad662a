'use client';

import { useRef, useState } from 'react';
import { parseRoute, parseSelector } from '@/lib/selector';
import { auditEventGroups, eventTypeLook } from '@/components/audit/event-types';
import { isoToLocalInput, localInputToIso } from '@/components/ui/local-time';
import { Button } from '@/components/ui/button';
import { controlVariants, describedBy, Field } from '@/components/ui/field';

export interface AuditFilter {
  route: string;
  type: string;
  since: string;
  until: string;
}

/** The grammar's verdict on the route box: empty means every route (the API's default, lease://**). */
function routeFilterError(value: string): string | undefined {
  const v = value.trim();
  if (!v) return undefined;
  // A route is a selector without wildcards; prefer the route's message when it has no wildcard at all.
  const r = v.includes('*') ? parseSelector(v) : parseRoute(v);
  return r.ok ? undefined : `Not a route or selector: it ${r.reason}.`;
}

/**
 * The audit filters. The text and time boxes apply with "Apply filters" (or
 * Enter), after the grammar and the time range check out; the event type
 * applies as soon as it is chosen.
 */
export function AuditFilters({ value, onApply }: { value: AuditFilter; onApply: (f: AuditFilter) => void }) {
  const [route, setRoute] = useState(value.route);
  const [since, setSince] = useState(isoToLocalInput(value.since));
  const [until, setUntil] = useState(isoToLocalInput(value.until));
  const [submitted, setSubmitted] = useState(false);
  const routeRef = useRef<HTMLInputElement>(null);

  const routeError = routeFilterError(route);
  const sinceIso = localInputToIso(since);
  const untilIso = localInputToIso(until);
  const rangeError = sinceIso && untilIso && sinceIso >= untilIso ? 'Until must be later than Since.' : undefined;
  const active = value.route || value.type || value.since || value.until;

  const apply = (patch: Partial<AuditFilter> = {}) =>
    onApply({ route: route.trim(), type: value.type, since: sinceIso ?? '', until: untilIso ?? '', ...patch });

  return (
    <form
      role="search"
      aria-label="Filter audit events"
      noValidate
      className="grid grid-cols-1 items-start gap-3 rounded-lg border border-zinc-200 bg-zinc-50/60 p-4 sm:grid-cols-2 lg:grid-cols-[minmax(16rem,2fr)_minmax(11rem,1fr)_minmax(11rem,1fr)_minmax(11rem,1fr)_auto] dark:border-zinc-800 dark:bg-zinc-900/40"
      onSubmit={(e) => {
        e.preventDefault();
        setSubmitted(true);
        if (routeError) {
          routeRef.current?.focus();
          return;
        }
        if (rangeError) return;
        apply();
      }}
    >
      <Field id="audit-route" label="Route or selector" error={routeError} hint={routeError ? undefined : 'A route, a selector such as lease://acme/**, or empty for all.'}>
        <input
          ref={routeRef}
          id="audit-route"
          type="text"
          value={route}
          onChange={(e) => setRoute(e.target.value)}
          placeholder="lease://**"
          autoComplete="off"
          autoCapitalize="off"
          spellCheck={false}
          aria-invalid={routeError ? true : undefined}
          aria-describedby={describedBy('audit-route', { error: !!routeError, hint: !routeError })}
          className={controlVariants({ invalid: !!routeError, mono: true })}
        />
      </Field>
      <Field id="audit-type" label="Event type">
        <select
          id="audit-type"
          value={value.type}
          onChange={(e) => apply({ type: e.target.value, route: routeError ? value.route : route.trim() })}
          className={controlVariants({ className: 'pr-8' })}
        >
          <option value="">All event types</option>
          {auditEventGroups().map(({ group, types }) => (
            <optgroup key={group} label={group}>
              {types.map((t) => (
                <option key={t} value={t}>
                  {eventTypeLook(t).label}
                </option>
              ))}
            </optgroup>
          ))}
        </select>
      </Field>
      <Field id="audit-since" label="Since" error={submitted ? rangeError : undefined}>
        <input
          id="audit-since"
          type="datetime-local"
          value={since}
          onChange={(e) => setSince(e.target.value)}
          aria-invalid={submitted && rangeError ? true : undefined}
          aria-describedby={describedBy('audit-since', { error: submitted && !!rangeError })}
          className={controlVariants({ invalid: submitted && !!rangeError })}
        />
      </Field>
      <Field id="audit-until" label="Until">
        <input
          id="audit-until"
          type="datetime-local"
          value={until}
          onChange={(e) => setUntil(e.target.value)}
          aria-invalid={submitted && rangeError ? true : undefined}
          className={controlVariants({ invalid: submitted && !!rangeError })}
        />
      </Field>
      <div className="flex items-center gap-2 sm:col-span-2 lg:col-span-1 lg:pt-6.5">
        <Button type="submit" variant="primary">
          Apply filters
        </Button>
        {active && (
          <Button
            variant="ghost"
            onClick={() => {
              setRoute('');
              setSince('');
              setUntil('');
              setSubmitted(false);
              onApply({ route: '', type: '', since: '', until: '' });
            }}
          >
            Clear
          </Button>
        )}
      </div>
    </form>
  );
}
