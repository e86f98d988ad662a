import { test } from 'node:test';
import assert from 'node:assert/strict';
import { contentSecurityPolicy, newNonce } from './csp';

const directives = (policy: string) => new Map(policy.split('; ').map((d) => [d.split(' ')[0]!, d.slice(d.indexOf(' ') + 1)] as const));

test('console pages: scripts only with the nonce, no plugins, no base rewriting, never framed', () => {
  const d = directives(contentSecurityPolicy({ nonce: 'abc123', dev: false, framable: false }));
  assert.equal(d.get('script-src'), "'self' 'nonce-abc123' 'strict-dynamic'");
  assert.equal(d.get('object-src'), "'none'");
  assert.equal(d.get('base-uri'), "'self'");
  assert.equal(d.get('frame-ancestors'), "'none'");
  assert.equal(d.get('default-src'), "'self'");
  assert.ok(!d.get('script-src')!.includes('unsafe'), 'no unsafe-inline or unsafe-eval in production');
});

test('embed pages may be framed; development adds only unsafe-eval', () => {
  assert.equal(directives(contentSecurityPolicy({ nonce: 'n', dev: false, framable: true })).has('frame-ancestors'), false);
  assert.match(directives(contentSecurityPolicy({ nonce: 'n', dev: true, framable: false })).get('script-src')!, /'unsafe-eval'$/);
});

test('every nonce is fresh: 128 bits, base64', () => {
  const a = newNonce();
  assert.match(a, /^[A-Za-z0-9+/]{22}==$/);
  assert.notEqual(a, newNonce());
});
