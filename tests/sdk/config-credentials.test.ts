/**
 * No `invalid_config` error carries a credential: a baseUrl's password or a
 * token never appears in the message, in String(error), in its stack, in
 * JSON.stringify(error), in util.inspect(error) or in its cause, whatever is
 * wrong with the options. Userinfo shows as `***@`, a query or fragment as
 * `?…` or `#…`, and the token (or anything shaped like one) as `***`.
 */

import assert from 'node:assert/strict';
import { inspect } from 'node:util';
import { test } from 'node:test';
import { LeaseholdClient, LeaseholdError, type LeaseholdClientOptions } from '@/lib/client';

const PASSWORD = 'secret';
/** A bearer token as the server makes them (`lh_` and 43 base64url characters). */
const TOKEN = 'lh_Zk3qV9xTq2LmP0aB7cD4eF6gH8iJ1kL5mN3oP9qR2sT';
/** A token of another shape: only its exact value can be masked. */
const OPAQUE = 'opaque-tok-4f7c9e21';

/** Every text an error may end up in: a log line, a JSON log, a console.error, an error reporter. */
function renderings(e: LeaseholdError): Record<string, string> {
  return {
    message: e.message,
    string: String(e),
    stack: e.stack ?? '',
    json: JSON.stringify(e),
    inspect: inspect(e, { depth: 5 }),
    cause: e.cause === undefined ? '' : `${String(e.cause)} ${JSON.stringify(e.cause)} ${inspect(e.cause)}`,
  };
}

function configError(opts: LeaseholdClientOptions): LeaseholdError {
  try {
    new LeaseholdClient({ fetch: async () => new Response(), ...opts });
  } catch (e) {
    assert.ok(e instanceof LeaseholdError, `expected a LeaseholdError, got ${String(e)}`);
    assert.equal(e.code, 'invalid_config');
    return e;
  }
  assert.fail(`accepted ${JSON.stringify(opts)}`);
}

function assertNoSecrets(e: LeaseholdError, label: string, secrets: readonly string[]): void {
  for (const [where, text] of Object.entries(renderings(e))) {
    for (const secret of secrets) {
      assert.ok(!text.includes(secret), `${label}: the error's ${where} contains ${JSON.stringify(secret)}: ${text}`);
    }
  }
}

const CASES: readonly { label: string; opts: LeaseholdClientOptions; says: RegExp; secrets?: readonly string[] }[] = [
  { label: 'a valid URL with userinfo', opts: { baseUrl: `http://ops:${PASSWORD}@leasehold.internal:3000`, token: TOKEN }, says: /'http:\/\/\*\*\*@leasehold\.internal:3000' carries credentials .* not allowed/ },
  { label: 'https with userinfo and a path', opts: { baseUrl: `https://ops:${PASSWORD}@leasehold.internal/api/` }, says: /'https:\/\/\*\*\*@leasehold\.internal\/api\/' carries credentials/ },
  { label: 'a user name alone', opts: { baseUrl: `http://${PASSWORD}@leasehold.internal:3000` }, says: /\*\*\*@leasehold\.internal.* carries credentials/ },
  { label: 'userinfo and no host', opts: { baseUrl: `http://ops:${PASSWORD}@` }, says: /carries credentials/ },
  { label: 'a malformed URL with userinfo', opts: { baseUrl: `http://ops:${PASSWORD}@lease hold:3000` }, says: /carries credentials/ },
  { label: 'an unsupported scheme with userinfo', opts: { baseUrl: `ftp://ops:${PASSWORD}@leasehold.internal` }, says: /'ftp:\/\/\*\*\*@leasehold\.internal' carries credentials/ },
  { label: 'a postgres URL given as the baseUrl', opts: { baseUrl: `postgres://postgres:${PASSWORD}@127.0.0.1:5432/leasehold` }, says: /carries credentials/ },
  { label: 'userinfo without a scheme', opts: { baseUrl: `ops:${PASSWORD}@leasehold.internal:3000` }, says: /'\*\*\*@leasehold\.internal:3000' carries credentials/ },
  { label: 'userinfo after a scheme without slashes', opts: { baseUrl: `http:ops:${PASSWORD}@leasehold.internal` }, says: /carries credentials/ },
  { label: 'userinfo with a percent-encoded colon', opts: { baseUrl: `http://ops%3A${PASSWORD}@leasehold.internal` }, says: /carries credentials/ },
  { label: 'a query carrying the token', opts: { baseUrl: `http://leasehold.internal:3000/?access_token=${TOKEN}`, token: TOKEN }, says: /'http:\/\/leasehold\.internal:3000\/\?…' must be an origin/ },
  { label: 'a query carrying a password', opts: { baseUrl: `http://leasehold.internal:3000/?password=${PASSWORD}` }, says: /without credentials, query or fragment/ },
  { label: 'a fragment carrying the token', opts: { baseUrl: `https://leasehold.internal/#token=${TOKEN}` }, says: /'https:\/\/leasehold\.internal\/#…' must be an origin/ },
  { label: 'an unsupported scheme with a query carrying the token', opts: { baseUrl: `ws://leasehold.internal/?token=${TOKEN}` }, says: /'ws:\/\/leasehold\.internal\/\?…' must use http: or https:, not ws:/ },
  { label: 'no scheme and a query carrying the token', opts: { baseUrl: `leasehold.internal:3000/?token=${TOKEN}` }, says: /must use http: or https:/ },
  { label: 'a relative URL carrying the token', opts: { baseUrl: `/api?token=${TOKEN}` }, says: /'\/api\?…' is not an absolute URL/ },
  { label: 'the token given as the baseUrl', opts: { baseUrl: TOKEN, token: TOKEN }, says: /baseUrl '\*\*\*' is not an absolute URL/ },
  { label: 'the token given as the baseUrl, no token option', opts: { baseUrl: TOKEN }, says: /baseUrl '\*\*\*' is not an absolute URL/ },
  { label: 'a header value given as the baseUrl', opts: { baseUrl: `Bearer ${TOKEN}` }, says: /'Bearer \*\*\*' is not an absolute URL/ },
  { label: 'an opaque token given as the baseUrl', opts: { baseUrl: OPAQUE, token: OPAQUE }, says: /baseUrl '\*\*\*' is not an absolute URL/, secrets: [OPAQUE] },
  { label: 'an opaque token in the path of a bad URL', opts: { baseUrl: `htp//leasehold.internal/${OPAQUE}`, token: OPAQUE }, says: /is not an absolute URL/, secrets: [OPAQUE] },
  { label: 'a token with a stray newline', opts: { baseUrl: 'http://leasehold.internal:3000', token: `${TOKEN}\n` }, says: /whitespace/ },
  { label: 'a token with a space', opts: { baseUrl: 'http://leasehold.internal:3000', token: `Bearer ${TOKEN}` }, says: /whitespace/ },
  { label: 'an opaque token with a space', opts: { baseUrl: 'http://leasehold.internal:3000', token: `${OPAQUE} ${PASSWORD}` }, says: /whitespace/, secrets: [OPAQUE] },
  { label: 'a token that is not a string', opts: { baseUrl: 'http://leasehold.internal:3000', token: { value: TOKEN } as unknown as string }, says: /token must be a string.*object/ },
  { label: 'a baseUrl that is not a string', opts: { baseUrl: new URL(`http://ops:${PASSWORD}@leasehold.internal/?t=${TOKEN}`) as unknown as string, token: TOKEN }, says: /baseUrl must be a string/ },
  { label: 'a fetch that is not a function', opts: { baseUrl: 'http://leasehold.internal:3000', token: TOKEN, fetch: `Bearer ${TOKEN}` as unknown as typeof fetch }, says: /no fetch implementation/ },
];

for (const { label, opts, says, secrets = [] } of CASES) {
  test(`invalid_config for ${label} carries no credential`, () => {
    const e = configError(opts);
    assert.match(e.message, says);
    assert.equal(e.cause, undefined, 'no cause (the URL parser\'s error echoes its input)');
    assertNoSecrets(e, label, [PASSWORD, TOKEN, TOKEN.slice(3), ...secrets]);
  });
}

test('a baseUrl without credentials, query or fragment is still accepted, path prefix kept', () => {
  assert.equal(new LeaseholdClient({ baseUrl: 'http://leasehold.internal:3000/prefix/', token: TOKEN }).baseUrl, 'http://leasehold.internal:3000/prefix');
  // An '@' in the path is not userinfo.
  assert.equal(new LeaseholdClient({ baseUrl: 'http://leasehold.internal/@ops/' }).baseUrl, 'http://leasehold.internal/@ops');
});
