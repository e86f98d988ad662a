'use client';

import { useMutation, useQueryClient } from '@tanstack/react-query';
import { isLeaseholdError, type TokenInfo } from '@/lib/client';
import { consoleClient } from '@/components/console/client';
import { queryKeys } from '@/components/query-keys';
import { Button } from '@/components/ui/button';
import { Dialog } from '@/components/ui/dialog';
import { ErrorAlert } from '@/components/ui/states';

/**
 * Confirm before revoking: the token stops authenticating at once and its
 * open streams close. The API's refusal (the last root token, a token that
 * is already gone) stays in the dialog as an alert with its correlation id.
 */
/** The tokens `id` minted, transitively, among those listed (the server revokes them with it). */
function mintedBy(id: string, all: readonly TokenInfo[]): TokenInfo[] {
  const out: TokenInfo[] = [];
  const seen = new Set([id]);
  for (let frontier = [id]; frontier.length > 0; ) {
    const next = all.filter((t) => t.created_by !== null && frontier.includes(t.created_by) && !seen.has(t.token_id));
    for (const t of next) seen.add(t.token_id);
    out.push(...next);
    frontier = next.map((t) => t.token_id);
  }
  return out;
}

export function RevokeTokenDialog({ token, all, own, onClose }: { token: TokenInfo | undefined; all: readonly TokenInfo[]; own: boolean; onClose: () => void }) {
  const queryClient = useQueryClient();
  const minted = token ? mintedBy(token.token_id, all) : [];
  const revoke = useMutation({
    mutationFn: (tokenId: string) => consoleClient().revokeToken(tokenId),
    onSuccess: () => {
      onClose();
      // Revoking the token this console signed in with ends the session: whoami answers invalid_credential and the shell goes to login.
      if (own) void queryClient.invalidateQueries({ queryKey: queryKeys.whoami() });
    },
    onSettled: () => queryClient.invalidateQueries({ queryKey: queryKeys.tokens() }),
  });
  // not_found: revoked elsewhere meanwhile, or expired; there is nothing left to confirm.
  const gone = isLeaseholdError(revoke.error, 'not_found');
  const close = () => {
    revoke.reset();
    onClose();
  };

  return (
    <Dialog open={token !== undefined} title="Revoke token" onClose={close}>
      {token && (
        <div className="space-y-4 text-sm">
          <p className="text-zinc-700 dark:text-zinc-300">
            Anything using this token, or any token it minted, is refused from now on, and their open streams close. This cannot be undone.
          </p>
          <dl className="grid grid-cols-[6rem_1fr] gap-x-3 gap-y-2 rounded-lg border border-zinc-200 p-3 dark:border-zinc-800">
            <dt className="text-zinc-500 dark:text-zinc-400">Name</dt>
            <dd className="font-medium break-words">{token.name}</dd>
            <dt className="text-zinc-500 dark:text-zinc-400">Token id</dt>
            <dd className="font-mono text-xs break-all">{token.token_id}</dd>
            <dt className="text-zinc-500 dark:text-zinc-400">Grants</dt>
            <dd className="space-y-0.5 font-mono text-xs break-all">
              {token.grants.map((g) => (
                <div key={g}>{g}</div>
              ))}
            </dd>
          </dl>
          {minted.length > 0 && (
            <div className="text-zinc-700 dark:text-zinc-300" data-testid="revoke-minted">
              <p>
                {minted.length === 1 ? 'This token it minted is revoked with it:' : `These ${minted.length} tokens it minted are revoked with it:`}
              </p>
              <ul className="mt-1 max-h-32 list-disc overflow-auto pl-5 text-xs">
                {minted.map((m) => (
                  <li key={m.token_id}>
                    <span className="font-medium break-words">{m.name}</span> <span className="font-mono">{m.token_id}</span>
                    {m.kind === 'embed' ? ' (embed)' : ''}
                  </li>
                ))}
              </ul>
            </div>
          )}
          {own && (
            <p className="rounded-lg border border-amber-300 bg-amber-50 px-3 py-2 text-amber-900 dark:border-amber-800 dark:bg-amber-950/40 dark:text-amber-200">
              This is the token you are signed in with: revoking it signs you out of the console.
            </p>
          )}
          {revoke.error && <ErrorAlert error={revoke.error} title={gone ? 'This token is already gone: revoked elsewhere, or expired' : 'The token was not revoked'} />}
          <div className="flex justify-end gap-2 pt-2">
            <Button onClick={close}>{gone ? 'Close' : 'Cancel'}</Button>
            {!gone && (
              <Button variant="danger" disabled={revoke.isPending} onClick={() => revoke.mutate(token.token_id)}>
                {revoke.isPending ? 'Revoking…' : 'Revoke token'}
              </Button>
            )}
          </div>
        </div>
      )}
    </Dialog>
  );
}
