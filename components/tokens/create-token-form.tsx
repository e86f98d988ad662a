'use client';

import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useRef, useState } from 'react';
import type { CreatedToken, Whoami } from '@/lib/client';
import { parseGrant } from '@/lib/grants';
import { identifierProblem } from '@/lib/identifiers';
import { localInputToIso } from '@/components/ui/local-time';
import { consoleClient } from '@/components/console/client';
import { can } from '@/components/console/use-whoami';
import { queryKeys } from '@/components/query-keys';
import { parseGrantLines } from '@/components/tokens/grant-lines';
import { Button } from '@/components/ui/button';
import { controlVariants, describedBy, Field } from '@/components/ui/field';
import { ErrorAlert } from '@/components/ui/states';

export interface CreatedTokenSecret extends CreatedToken {
  name: string;
}

/**
 * Create a token: a name, grants one a line (each checked against the
 * grammar as typed; nothing is sent while one fails), an optional expiry.
 * The secret goes to `onCreated`, once.
 */
export function CreateTokenForm({ me, onCreated }: { me: Whoami; onCreated: (t: CreatedTokenSecret) => void }) {
  const queryClient = useQueryClient();
  const [name, setName] = useState('');
  const [grantsText, setGrantsText] = useState('');
  const [expires, setExpires] = useState('');
  const [submitted, setSubmitted] = useState(false);
  const nameRef = useRef<HTMLInputElement>(null);
  const grantsRef = useRef<HTMLTextAreaElement>(null);
  const expiresRef = useRef<HTMLInputElement>(null);

  const { grants, errors } = parseGrantLines(grantsText);
  // The server's rule for names (lib/identifiers.ts), shown as typed: no bidi, zero-width or control characters.
  const nameProblem = identifierProblem(name);
  const nameError = nameProblem
    ? `The name ${nameProblem}: such characters make one name look like another.`
    : submitted && !name.trim()
      ? 'Give the token a name, so it can be told apart in the list and the audit trail.'
      : undefined;
  const grantsError =
    errors.length > 0
      ? errors.map((e) => `Line ${e.line}: ${e.reason}.`).join(' ')
      : submitted && grants.length === 0
        ? 'Add at least one grant.'
        : undefined;
  const expiresIso = localInputToIso(expires);
  // Compared when the form is submitted, not on every render (the clock is not render state).
  const [expiresError, setExpiresError] = useState<string>();
  // The server decides; this only warns early about grants no admin grant of the caller contains.
  const beyond = grants.filter((g) => {
    const r = parseGrant(g);
    return r.ok && !can(me, r.value.selector, 'admin');
  });

  const create = useMutation({
    mutationFn: (input: { name: string; grants: string[]; expiresAt?: string }) => consoleClient().createToken(input),
    onSuccess: (created, input) => {
      onCreated({ ...created, name: input.name });
      setName('');
      setGrantsText('');
      setExpires('');
      setSubmitted(false);
    },
    onSettled: () => queryClient.invalidateQueries({ queryKey: queryKeys.tokens() }),
  });

  return (
    <form
      noValidate
      className="space-y-4"
      onSubmit={(e) => {
        e.preventDefault();
        setSubmitted(true);
        const exp = expires && !expiresIso ? 'Enter a complete date and time, or leave it empty.' : expiresIso && Date.parse(expiresIso) <= Date.now() ? 'The expiry must be in the future.' : undefined;
        setExpiresError(exp);
        if (!name.trim() || nameProblem) return nameRef.current?.focus();
        if (errors.length > 0 || grants.length === 0) return grantsRef.current?.focus();
        if (exp) return expiresRef.current?.focus();
        create.mutate({ name: name.trim(), grants, expiresAt: expiresIso });
      }}
    >
      <Field id="token-name" label="Name" error={nameError}>
        <input
          ref={nameRef}
          id="token-name"
          type="text"
          value={name}
          maxLength={128}
          onChange={(e) => setName(e.target.value)}
          placeholder="renderer fleet (production)"
          autoComplete="off"
          aria-invalid={nameError ? true : undefined}
          aria-describedby={describedBy('token-name', { error: !!nameError })}
          className={controlVariants({ invalid: !!nameError })}
        />
      </Field>
      <Field
        id="token-grants"
        label="Grants"
        error={grantsError}
        hint={
          <>
            One <span className="font-mono">selector#permission</span> a line; permission is read, write or admin. Each must sit inside one of your admin grants.
            {beyond.length > 0 && errors.length === 0 && (
              <span className="mt-1 block text-amber-700 dark:text-amber-400">
                No admin grant of yours contains {beyond.join(', ')}: the server will refuse it.
              </span>
            )}
          </>
        }
      >
        <textarea
          ref={grantsRef}
          id="token-grants"
          rows={4}
          value={grantsText}
          onChange={(e) => setGrantsText(e.target.value)}
          placeholder={'lease://acme/renderers/*#write\nlease://acme/**#read'}
          autoComplete="off"
          autoCapitalize="off"
          spellCheck={false}
          aria-invalid={grantsError ? true : undefined}
          aria-describedby={describedBy('token-grants', { error: !!grantsError, hint: true })}
          className={controlVariants({ invalid: !!grantsError, shape: 'area', mono: true, className: 'resize-y' })}
        />
      </Field>
      <Field id="token-expires" label="Expires (optional)" error={expiresError} hint={expiresError ? undefined : 'Your local time. Empty: the token lasts until revoked.'}>
        <input
          ref={expiresRef}
          id="token-expires"
          type="datetime-local"
          value={expires}
          onChange={(e) => setExpires(e.target.value)}
          aria-invalid={expiresError ? true : undefined}
          aria-describedby={describedBy('token-expires', { error: !!expiresError, hint: !expiresError })}
          className={controlVariants({ invalid: !!expiresError, className: 'sm:w-64' })}
        />
      </Field>
      {create.error && <ErrorAlert error={create.error} title="The token was not created" />}
      <Button type="submit" variant="primary" disabled={create.isPending}>
        {create.isPending ? 'Creating…' : 'Create token'}
      </Button>
    </form>
  );
}
