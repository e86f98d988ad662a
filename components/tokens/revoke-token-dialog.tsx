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
export function RevokeTokenDialog({ token, own, onClose }: { token: TokenInfo | undefined; own: boolean; onClose: () => void }) {
  const queryClient = useQueryClient();
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
            Anything using this token is refused from now on, and its open streams close. This cannot be undone.
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
