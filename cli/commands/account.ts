/** `login`, `logout` and `whoami`. */

import type { Command } from 'commander';
import { LeaseholdClient } from '../../lib/client/index';
import { configPath, deleteConfig, readConfig, readTokenFile, writeConfig } from '../connection';
import { CliError, EXIT } from '../errors';
import { jsonLine, styleFor, table } from '../format';
import { readSecret } from '../prompt';
import { clientFor, example, note, print, withConnection, withJson, type CommonOptions } from '../common';

export function registerAccount(program: Command): void {
  example(
    program
      .command('login')
      .description('check a token against the server and save both (mode 0600); the token is read without echo, or from stdin')
      .option('--url <url>', 'the server (default: LEASEHOLD_URL, then the saved one)')
      .option('--token-file <path>', 'read the token from this file instead of a prompt')
      .action(async (opts: { url?: string; tokenFile?: string }) => {
        const url = opts.url ?? (process.env.LEASEHOLD_URL || undefined) ?? readConfig().url;
        if (url === undefined) throw new CliError('login needs --url (or LEASEHOLD_URL)', EXIT.usage);
        const token = opts.tokenFile !== undefined ? readTokenFile(opts.tokenFile) : await readSecret('Token: ');
        if (token === '') throw new CliError('no token given', EXIT.usage);
        const who = await new LeaseholdClient({ baseUrl: url, token }).whoami();
        const file = writeConfig({ url, token });
        note(`Logged in to ${url} as ${who.name} (${who.token_id}, family ${who.family}); saved to ${file}`);
      }),
    'leasehold login --url http://127.0.0.1:3000',
    'leasehold login --url http://127.0.0.1:3000 < ~/.leasehold-token',
  );

  example(
    program
      .command('logout')
      .description('delete the saved login (the token itself stays valid: revoke it with `tokens revoke`)')
      .action(() => {
        note(deleteConfig() ? `Deleted ${configPath()}` : `Not logged in (no ${configPath()})`);
      }),
    'leasehold logout',
  );

  example(
    withJson(withConnection(program.command('whoami').description('the token in use: family, token id, root flag and grants'))).action(async (opts: CommonOptions) => {
      const who = await clientFor(opts).whoami();
      if (opts.json) return print(jsonLine(who));
      const style = styleFor(process.stdout);
      print(
        table(
          ['FIELD', 'VALUE'],
          [
            ['name', who.name],
            ['token id', who.token_id],
            ['family', who.family],
            ['root', who.root ? 'yes' : 'no'],
            ...who.grants.map((g, i) => [i === 0 ? 'grants' : '', g]),
          ],
          style,
        ),
      );
    }),
    'leasehold whoami --json',
  );
}
