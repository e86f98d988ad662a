'use client';

import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useRef, useState } from 'react';
import type { CreatedEmbedToken } from '@/lib/client';
import { parseSelector } from '@/lib/selector';
import { consoleClient } from '@/components/console/client';
import { queryKeys } from '@/components/query-keys';
import { SecretOnce, SecretValue } from '@/components/tokens/secret-once';
import { Button } from '@/components/ui/button';
import { controlVariants, describedBy, Field } from '@/components/ui/field';
import { Timestamp } from '@/components/ui/timestamp';
import { ErrorAlert } from '@/components/ui/states';

const MAX_TTL_MIN = 24 * 60;

/**
 * The iframe a product team pastes into its page. The token rides in the
 * fragment, so it never reaches a server log or a Referer header.
 */
function iframeSnippet(origin: string, selector: string, token: string): string {
  const src = `${origin}/embed/inventory?selector=${encodeURIComponent(selector)}#token=${encodeURIComponent(token)}`;
  return `<iframe src="${src}" title="Lease inventory" width="100%" height="360" style="border:0" referrerpolicy="no-referrer" loading="lazy"></iframe>`;
}

function ttlError(text: string): string | undefined {
  if (!/^\d+$/.test(text.trim())) return 'Enter a whole number of minutes.';
  const n = Number(text);
  if (n < 1) return 'At least 1 minute.';
  if (n > MAX_TTL_MIN) return 'At most 1440 minutes (24 h): embed tokens are short-lived by design.';
  return undefined;
}

/** Make a read-only embed token for one selector and the snippet that uses it; both shown once. */
export function EmbedTokenForm() {
  const queryClient = useQueryClient();
  const [selector, setSelector] = useState('');
  const [ttl, setTtl] = useState('60');
  const [submitted, setSubmitted] = useState(false);
  const [made, setMade] = useState<(CreatedEmbedToken & { selector: string; snippet: string }) | undefined>();
  const selectorRef = useRef<HTMLInputElement>(null);
  const ttlRef = useRef<HTMLInputElement>(null);

  const sel = selector.trim() ? parseSelector(selector.trim()) : undefined;
  const selectorError = sel && !sel.ok ? `Not a selector: it ${sel.reason}.` : submitted && !sel ? 'Enter the selector the widget will show.' : undefined;
  const ttlProblem = ttlError(ttl);
  const ttlShown = submitted || ttl !== '' ? ttlProblem : undefined;

  const make = useMutation({
    mutationFn: (input: { selector: string; ttlMs: number }) => consoleClient().createEmbedToken(input.selector, { ttlMs: input.ttlMs }),
    onSuccess: (created, input) => {
      setMade({ ...created, selector: input.selector, snippet: iframeSnippet(window.location.origin, input.selector, created.token) });
      setSubmitted(false);
    },
    onSettled: () => queryClient.invalidateQueries({ queryKey: queryKeys.tokens() }),
  });

  if (made) {
    return (
      <SecretOnce
        title="Embed token made"
        footer={
          <Button onClick={() => setMade(undefined)} variant="secondary">
            Make another
          </Button>
        }
      >
        <p className="text-sm text-amber-950 dark:text-amber-100">
          Read-only for <span className="font-mono">{made.selector}</span>, until{' '}
          <Timestamp at={made.expires_at} format="date" />
          .
        </p>
        <SecretValue label="Embed token" value={made.token} copyLabel="Copy embed token" />
        <SecretValue label="Iframe snippet" value={made.snippet} copyLabel="Copy snippet" multiline />
      </SecretOnce>
    );
  }

  return (
    <form
      noValidate
      className="space-y-4"
      onSubmit={(e) => {
        e.preventDefault();
        setSubmitted(true);
        if (!sel || !sel.ok) return selectorRef.current?.focus();
        if (ttlProblem) return ttlRef.current?.focus();
        make.mutate({ selector: sel.value.selector, ttlMs: Number(ttl) * 60_000 });
      }}
    >
      <Field id="embed-selector" label="Selector" error={selectorError} hint={selectorError ? undefined : 'What the widget shows, live; one of your grants must allow reading it.'}>
        <input
          ref={selectorRef}
          id="embed-selector"
          type="text"
          value={selector}
          onChange={(e) => setSelector(e.target.value)}
          placeholder="lease://acme/renderers/*"
          autoComplete="off"
          autoCapitalize="off"
          spellCheck={false}
          aria-invalid={selectorError ? true : undefined}
          aria-describedby={describedBy('embed-selector', { error: !!selectorError, hint: !selectorError })}
          className={controlVariants({ invalid: !!selectorError, mono: true })}
        />
      </Field>
      <Field id="embed-ttl" label="TTL (minutes)" error={ttlShown} hint="1 to 1440 (24 h).">
        <input
          ref={ttlRef}
          id="embed-ttl"
          type="number"
          inputMode="numeric"
          min={1}
          max={MAX_TTL_MIN}
          step={1}
          value={ttl}
          onChange={(e) => setTtl(e.target.value)}
          aria-invalid={ttlShown ? true : undefined}
          aria-describedby={describedBy('embed-ttl', { error: !!ttlShown, hint: true })}
          className={controlVariants({ invalid: !!ttlShown, className: 'w-32 tabular-nums' })}
        />
      </Field>
      {make.error && <ErrorAlert error={make.error} title="The embed token was not made" />}
      <Button type="submit" variant="primary" disabled={make.isPending}>
        {make.isPending ? 'Making…' : 'Make embed token'}
      </Button>
    </form>
  );
}
