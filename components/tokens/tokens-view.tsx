'use client';

import { useState, type ReactNode } from 'react';
import { parsedGrants, useWhoami } from '@/components/console/use-whoami';
import { CreateTokenForm, type CreatedTokenSecret } from '@/components/tokens/create-token-form';
import { EmbedTokenForm } from '@/components/tokens/embed-token-form';
import { SecretOnce, SecretValue } from '@/components/tokens/secret-once';
import { TokenList } from '@/components/tokens/token-list';
import { Button } from '@/components/ui/button';

/**
 * Tokens: create (the secret shown once), make embed tokens, list and
 * revoke. The forms stay usable when the list is denied: a token with admin
 * on part of the tree can still mint tokens inside it.
 */
export function TokensView() {
  const me = useWhoami().data;
  const [created, setCreated] = useState<CreatedTokenSecret>();
  if (!me) return null; // the console shell renders pages only once whoami has answered
  const canMint = parsedGrants(me).some((g) => g.permission === 'admin');

  return (
    <div className="space-y-10">
      <div className="grid items-start gap-6 lg:grid-cols-2">
        <Card title="Create a token" description="For a service or a person: grants say what it may read, write or administer.">
          {created ? (
            <SecretOnce
              title={`Token “${created.name}” created`}
              footer={
                <Button variant="primary" onClick={() => setCreated(undefined)}>
                  Done, I have copied it
                </Button>
              }
            >
              <SecretValue label="Token secret" value={created.token} copyLabel="Copy token" />
              <p className="text-xs text-amber-900 dark:text-amber-200">
                Token id <span className="font-mono select-all">{created.token_id}</span> · family <span className="font-mono">{created.family}</span>
              </p>
            </SecretOnce>
          ) : canMint ? (
            <CreateTokenForm me={me} onCreated={setCreated} />
          ) : (
            <p className="text-sm text-zinc-600 dark:text-zinc-400">
              Your token has no admin grant, so it cannot create tokens. Ask someone with admin on the routes you need.
            </p>
          )}
        </Card>
        <Card title="Make embed token" description="A read-only token for one selector, for the inventory widget in another page's iframe. Lasts at most 24 hours.">
          <EmbedTokenForm />
        </Card>
      </div>
      <TokenList me={me} />
    </div>
  );
}

function Card({ title, description, children }: { title: string; description: string; children: ReactNode }) {
  return (
    <section aria-label={title} className="rounded-xl border border-zinc-200 p-5 shadow-xs dark:border-zinc-800 dark:bg-zinc-900/30">
      <h2 className="text-base font-semibold tracking-tight">{title}</h2>
      <p className="mt-1 mb-5 text-sm text-zinc-600 dark:text-zinc-400">{description}</p>
      {children}
    </section>
  );
}
