'use client';

import { useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import { isLeaseholdError, type TokenInfo, type Whoami } from '@/lib/client';
import { consoleClient } from '@/components/console/client';
import { queryKeys } from '@/components/query-keys';
import { RevokeTokenDialog } from '@/components/tokens/revoke-token-dialog';
import { Badge } from '@/components/ui/badge';
import { Button } from '@/components/ui/button';
import { Timestamp } from '@/components/ui/timestamp';
import { RefreshButton } from '@/components/ui/refresh-button';
import { ShortId } from '@/components/ui/short-id';
import { DeniedPanel, EmptyState, ErrorAlert, SkeletonRows } from '@/components/ui/states';
import { Table, TBody, Td, Th, THead } from '@/components/ui/table';
import { formatAgo } from '@/components/ui/time';
import { useNow } from '@/components/ui/use-now';

const COLS = 7;

/** The family's tokens, API and live embed tokens (badged `embed`), each with Revoke (which takes what it minted with it). */
export function TokenList({ me }: { me: Whoami }) {
  const query = useQuery({
    queryKey: queryKeys.tokens(),
    queryFn: () => consoleClient().listTokens(),
    retry: (count, e) => !isLeaseholdError(e) && count < 1,
  });
  const [revoking, setRevoking] = useState<TokenInfo>();
  const tokens = query.data;

  return (
    <section aria-labelledby="tokens-list-heading" className="space-y-3">
      <div className="flex flex-wrap items-end justify-between gap-3">
        <div>
          <h2 id="tokens-list-heading" className="text-lg font-semibold tracking-tight">
            Tokens of family <span className="font-mono">{me.family}</span>
          </h2>
          <p className="text-sm text-zinc-600 dark:text-zinc-400">
            {tokens ? `${tokens.length} active token${tokens.length === 1 ? '' : 's'}. ` : ''}Secrets are never shown again after creation.
          </p>
        </div>
        <RefreshButton busy={query.isFetching} onClick={() => void query.refetch()} />
      </div>

      {query.error && !tokens ? (
        isLeaseholdError(query.error, 'access_denied') ? (
          <DeniedPanel error={query.error} what="list tokens (that needs admin on lease://**)" />
        ) : (
          <ErrorAlert
            error={query.error}
            title="Tokens could not be loaded"
            action={
              <Button size="sm" onClick={() => void query.refetch()}>
                Try again
              </Button>
            }
          />
        )
      ) : tokens && tokens.length === 0 ? (
        <EmptyState title="No tokens">Create one above; the family&apos;s root token appears here too.</EmptyState>
      ) : (
        <>
          {query.error && <ErrorAlert error={query.error} title="The list could not be refreshed" />}
          <Table aria-label="Tokens" aria-busy={query.isFetching}>
            <THead>
              <tr>
                <Th>Name</Th>
                <Th>Token id</Th>
                <Th>Family</Th>
                <Th>Grants</Th>
                <Th>Created</Th>
                <Th>Expires</Th>
                <Th>
                  <span className="sr-only">Actions</span>
                </Th>
              </tr>
            </THead>
            <TBody>
              {tokens
                ? tokens.map((t) => <TokenRow key={t.token_id} token={t} own={t.token_id === me.token_id} onRevoke={() => setRevoking(t)} />)
                : <SkeletonRows cols={COLS} rows={3} />}
            </TBody>
          </Table>
        </>
      )}
      <RevokeTokenDialog token={revoking} all={tokens ?? []} own={revoking?.token_id === me.token_id} onClose={() => setRevoking(undefined)} />
    </section>
  );
}

function TokenRow({ token: t, own, onRevoke }: { token: TokenInfo; own: boolean; onRevoke: () => void }) {
  const now = useNow();
  const expiresSoon = t.expires_at !== null && now > 0 && Date.parse(t.expires_at) - now < 86_400_000;
  return (
    <tr>
      <Td>
        <div className="flex flex-wrap items-center gap-1.5">
          <span className="font-medium break-words">{t.name}</span>
          {t.root && <Badge tone="warn">root</Badge>}
          {t.kind === 'embed' && <Badge tone="neutral">embed</Badge>}
          {own && <Badge tone="info">you</Badge>}
        </div>
      </Td>
      <Td className="whitespace-nowrap">
        <ShortId id={t.token_id} copyLabel="Copy token id" />
      </Td>
      <Td className="font-mono text-xs">{t.family}</Td>
      <Td>
        <ul aria-label={`Grants of ${t.name}`} className="flex max-w-md flex-wrap gap-1">
          {t.grants.map((g) => (
            <li key={g}>
              <GrantChip grant={g} />
            </li>
          ))}
        </ul>
      </Td>
      <Td className="text-xs whitespace-nowrap">
        <Timestamp at={t.created_at} format="date" />
        {now > 0 && <div className="text-zinc-500 dark:text-zinc-400">{formatAgo(t.created_at, now)}</div>}
      </Td>
      <Td className="text-xs whitespace-nowrap">
        {t.expires_at ? (
          <Timestamp at={t.expires_at} format="date" className={expiresSoon ? 'text-amber-700 dark:text-amber-400' : undefined} />
        ) : (
          <span className="text-zinc-500 dark:text-zinc-400">never</span>
        )}
      </Td>
      <Td className="text-right">
        <Button size="sm" variant="ghost" aria-label={`Revoke ${t.name}`} onClick={onRevoke}>
          Revoke
        </Button>
      </Td>
    </tr>
  );
}

const PERMISSION_TONE = { read: 'neutral', write: 'info', admin: 'warn' } as const;

/** `lease://acme/**#read` as a chip: the selector, then its permission in the permission's color. */
function GrantChip({ grant }: { grant: string }) {
  const hash = grant.lastIndexOf('#');
  const selector = hash < 0 ? grant : grant.slice(0, hash);
  const permission = hash < 0 ? '' : grant.slice(hash + 1);
  const tone = PERMISSION_TONE[permission as keyof typeof PERMISSION_TONE] ?? 'neutral';
  return (
    <Badge tone={tone} title={grant} className="rounded-md font-mono">
      <span className="break-all">{selector}</span>
      {/* Set apart by weight, not by fading: a faded suffix fell below 4.5:1 on the tinted chips. */}
      <span className="font-semibold">#{permission}</span>
    </Badge>
  );
}
