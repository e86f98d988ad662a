'use client';

import { useMutation, useQueryClient } from '@tanstack/react-query';
import Link from 'next/link';
import { useSearchParams } from 'next/navigation';
import { useState } from 'react';
import type { Whoami } from '@/lib/client';
import { consoleClient } from '@/components/console/client';
import { useSignOut } from '@/components/console/sign-out';
import { useWhoami } from '@/components/console/use-whoami';
import { queryKeys } from '@/components/query-keys';
import { Button, buttonVariants } from '@/components/ui/button';
import { ErrorAlert } from '@/components/ui/states';
import { safeNext } from './safe-next';


export function LoginForm() {
  const [token, setToken] = useState('');
  const queryClient = useQueryClient();
  const next = safeNext(useSearchParams().get('next'));
  const me = useWhoami();
  const signOut = useSignOut();
  const login = useMutation({
    mutationFn: async (secret: string) => {
      const client = consoleClient();
      await client.login(secret);
      return client.whoami();
    },
    onSuccess: (who) => {
      setToken('');
      queryClient.clear();
      queryClient.setQueryData(queryKeys.whoami(), who);
    },
  });

  if (me.data) return <SignedIn me={me.data} next={next} onSignOut={() => void signOut()} />;

  return (
    <form
      className="space-y-4"
      onSubmit={(e) => {
        e.preventDefault();
        if (token.trim()) login.mutate(token.trim());
      }}
    >
      <div>
        <label htmlFor="token" className="block text-sm font-medium">
          Token
        </label>
        <input
          id="token"
          name="token"
          type="text"
          autoComplete="off"
          autoCapitalize="off"
          spellCheck={false}
          required
          value={token}
          onChange={(e) => setToken(e.target.value)}
          placeholder="lh_…"
          className="mt-1.5 block w-full rounded-lg border border-zinc-300 bg-white px-3 py-2 font-mono text-sm shadow-xs placeholder:text-zinc-400 dark:border-zinc-700 dark:bg-zinc-900"
        />
        <p className="mt-1.5 text-xs text-zinc-500 dark:text-zinc-400">
          The token stays in an httpOnly cookie for this console only; scripts on the page never see it.
        </p>
      </div>
      {login.error && <ErrorAlert error={login.error} title="Sign-in failed" />}
      <Button type="submit" variant="primary" className="w-full" disabled={login.isPending || token.trim() === ''}>
        {login.isPending ? 'Signing in…' : 'Sign in'}
      </Button>
    </form>
  );
}

function SignedIn({ me, next, onSignOut }: { me: Whoami; next: string; onSignOut: () => void }) {
  return (
    <div className="space-y-5">
      <div role="status" className="rounded-lg border border-emerald-200 bg-emerald-50 px-4 py-3 text-sm dark:border-emerald-900 dark:bg-emerald-950/50">
        Signed in as <span className="font-medium">{me.name}</span>
      </div>
      <dl className="grid grid-cols-[6rem_1fr] gap-y-2 text-sm">
        <dt className="text-zinc-500 dark:text-zinc-400">Family</dt>
        <dd className="font-mono">{me.family}</dd>
        <dt className="text-zinc-500 dark:text-zinc-400">Token</dt>
        <dd className="font-mono">{me.token_id}</dd>
        <dt className="text-zinc-500 dark:text-zinc-400">Root</dt>
        <dd>{me.root ? 'yes' : 'no'}</dd>
        <dt className="text-zinc-500 dark:text-zinc-400">Grants</dt>
        <dd>
          <ul aria-label="Grants" className="space-y-1">
            {me.grants.map((g) => (
              <li key={g} className="font-mono break-all">
                {g}
              </li>
            ))}
          </ul>
        </dd>
      </dl>
      <div className="flex gap-2">
        <Link href={next} className={buttonVariants({ variant: 'primary', className: 'flex-1' })}>
          Continue to the console
        </Link>
        <Button onClick={onSignOut}>Sign out</Button>
      </div>
    </div>
  );
}
