import { test } from 'node:test';
import assert from 'node:assert/strict';
import { safeNext } from './safe-next';

const ORIGIN = 'https://leasehold.example';

/** Where a browser on the console's origin lands when it follows the link. */
const landsOn = (next: string | null) => new URL(safeNext(next), ORIGIN);

test('open-redirect tricks all fall back to /leases on the console’s own origin', () => {
  for (const evil of [
    '/\\evil.example/x',
    '/\\\t/evil.example',
    '/\t/evil.example/x',
    '/\n/evil.example',
    '//evil.example',
    '///evil.example',
    '/\\/evil.example',
    'https://evil.example',
    'javascript:alert(1)',
    '\\\\evil.example',
    ' //evil.example',
  ]) {
    const to = landsOn(evil);
    assert.equal(to.origin, ORIGIN, `${JSON.stringify(evil)} leaves the origin`);
    assert.equal(to.pathname, '/leases', `${JSON.stringify(evil)} falls back to /leases`);
  }
});

test('a console path is kept with its query, normalised by the URL parser', () => {
  assert.equal(safeNext('/leases?selector=lease%3A%2F%2Fa%2F*%2F*'), '/leases?selector=lease%3A%2F%2Fa%2F*%2F*');
  assert.equal(safeNext('/tokens'), '/tokens');
  assert.equal(safeNext('/audit/../sessions'), '/sessions');
  assert.equal(landsOn('/sessions#x').pathname, '/sessions');
});

test('no next, an empty one, or the login page itself goes to /leases', () => {
  assert.equal(safeNext(null), '/leases');
  assert.equal(safeNext(''), '/leases');
  assert.equal(safeNext('/login'), '/leases');
  assert.equal(safeNext('/login?next=/tokens'), '/leases');
});
