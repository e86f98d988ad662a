/** `tokens ls|create|revoke` and `embed-token`: token administration. */

import type { Command } from 'commander';
import { jsonLine, relative, styleFor, table } from '../format';
import { clientFor, durationArg, example, note, print, withConnection, withJson, type CommonOptions } from '../common';

export function registerTokens(program: Command): void {
  const tokens = program.command('tokens').description('list, create and revoke API tokens');
  example(tokens, 'leasehold tokens ls', "leasehold tokens create --name ci --grant 'lease://acme/**#write'");

  example(
    withJson(withConnection(tokens.command('ls').description('the tokens of your family (root: --family for another)').option('--family <family>', 'another family (root tokens only)'))).action(
      async (opts: CommonOptions & { family?: string }) => {
        const items = await clientFor(opts).listTokens(opts.family ? { family: opts.family } : {});
        if (opts.json) {
          for (const t of items) print(jsonLine(t));
          return;
        }
        const now = Date.now();
        print(
          table(
            ['TOKEN ID', 'NAME', 'FAMILY', 'ROOT', 'CREATED', 'EXPIRES', 'GRANTS'],
            items.map((t) => [t.token_id, t.name, t.family, t.root ? 'yes' : 'no', relative(t.created_at, now), t.expires_at ? relative(t.expires_at, now) : 'never', t.grants.join(' ')]),
            styleFor(process.stdout),
          ),
        );
      },
    ),
    'leasehold tokens ls --json',
  );

  example(
    withJson(
      withConnection(
        tokens
          .command('create')
          .description('create a token; its secret is printed once, now')
          .requiredOption('--name <name>', 'a name people recognise')
          .requiredOption('--grant <grant...>', 'selector#permission, e.g. lease://acme/**#write (repeatable)')
          .option('--expires <duration>', 'expire after this long (e.g. 30d); default never', durationArg),
      ),
      'print the created token as JSON',
    ).action(async (opts: CommonOptions & { name: string; grant: string[]; expires?: number }) => {
      const created = await clientFor(opts).createToken({
        name: opts.name,
        grants: opts.grant,
        ...(opts.expires !== undefined ? { expiresAt: new Date(Date.now() + opts.expires).toISOString() } : {}),
      });
      if (opts.json) return print(jsonLine(created));
      print(`${created.token}\n`);
      note(`Created ${created.token_id} in family ${created.family}. The secret above is shown only now.`);
    }),
    "leasehold tokens create --name renderers --grant 'lease://acme/renderers/*#write' --expires 30d",
  );

  example(
    withConnection(tokens.command('revoke').description('revoke a token: its streams end and its calls are refused').argument('<token-id>', 'e.g. tk_…')).action(
      async (tokenId: string, opts: CommonOptions) => {
        await clientFor(opts).revokeToken(tokenId);
        note(`Revoked ${tokenId}`);
      },
    ),
    'leasehold tokens revoke tk_0123456789',
  );

  example(
    withJson(
      withConnection(
        program
          .command('embed-token')
          .description('a read-only token for one selector (at most 24 h), for the inventory widget')
          .argument('<selector>', "e.g. 'lease://acme/renderers/*'")
          .option('--ttl <duration>', 'how long it lasts (default: the server\'s, at most 24h)', durationArg),
      ),
      'print the created token as JSON',
    ).action(async (selector: string, opts: CommonOptions & { ttl?: number }) => {
      const created = await clientFor(opts).createEmbedToken(selector, opts.ttl !== undefined ? { ttlMs: opts.ttl } : {});
      if (opts.json) return print(jsonLine(created));
      print(`${created.token}\n`);
      note(`Created ${created.token_id}, read-only on ${selector}, expires ${created.expires_at}.`);
    }),
    "leasehold embed-token 'lease://acme/renderers/*' --ttl 8h",
  );
}
