import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { contains, matches, parseRoute, parseSelector, routeSegments, selectorOrThrow } from './selector';
import { allowingGrant, parseGrant } from './grants';

describe('selector grammar (docs/semantics.md §3)', () => {
  const valid = [
    'lease://acme/renderers/doc-1',
    'lease://acme/renderers/*',
    'lease://acme/*/doc-1',
    'lease://*/*/*',
    'lease://acme/**',
    'lease://**',
    'lease://**/doc-1',
    'lease://acme/**/doc-1',
    'lease://*/**',
  ];
  const rejected = [
    'lease://acme/renderers',
    'lease://acme/renderers/doc-1/extra',
    'lease://acme/renderers/doc*',
    'lease://acme//doc-1',
    'notice://acme/renderers/*',
    'lease://a/b/c/**',
    'lease://**/**',
    'lease://acme/renderers/',
    'lease://acme/renderers/*x',
    'lease://acme/renderers/***',
    'lease://',
    'lease:/acme/renderers/doc-1',
    'LEASE://acme/renderers/doc-1',
    'lease://acme/./doc-1',
    'lease://acme/../doc-1',
    'lease://acme/ren ders/doc-1',
    'lease://acme/rénders/doc-1',
    `lease://acme/renderers/${'x'.repeat(129)}`,
  ];

  for (const s of valid) {
    test(`accepts ${s}`, () => {
      assert.equal(parseSelector(s).ok, true);
    });
  }
  for (const s of rejected) {
    test(`rejects ${JSON.stringify(s.length > 60 ? s.slice(0, 60) + '…' : s)}`, () => {
      assert.equal(parseSelector(s).ok, false);
    });
  }

  test('a selector over 400 bytes is rejected even with valid segments', () => {
    const seg = 'x'.repeat(128);
    assert.equal(parseSelector(`lease://${seg}/${seg}/${seg}`).ok, true, '392 bytes is fine');
    assert.equal(parseRoute(`lease://${seg}/${seg}/${seg}xx`).ok, false);
  });

  test('** expands to the wildcards that make three segments', () => {
    assert.deepEqual(selectorOrThrow('lease://acme/**').triple, ['acme', null, null]);
    assert.deepEqual(selectorOrThrow('lease://**').triple, [null, null, null]);
    assert.deepEqual(selectorOrThrow('lease://**/doc-1').triple, [null, null, 'doc-1']);
    assert.deepEqual(selectorOrThrow('lease://acme/**/doc-1').triple, ['acme', null, 'doc-1']);
    assert.deepEqual(selectorOrThrow('lease://*/**').triple, [null, null, null]);
    assert.deepEqual(selectorOrThrow('lease://acme/r/**').triple, ['acme', 'r', null]);
  });

  test('classification: exact only when every position is literal', () => {
    assert.equal(selectorOrThrow('lease://acme/renderers/doc-1').exact, true);
    assert.equal(selectorOrThrow('lease://acme/renderers/*').exact, false);
    assert.equal(selectorOrThrow('lease://acme/renderers/**').exact, false);
  });

  test('routes accept only three literal segments and are never normalized', () => {
    assert.equal(parseRoute('lease://acme/renderers/doc-1').ok, true);
    assert.equal(parseRoute('lease://acme/renderers/*').ok, false);
    assert.equal(parseRoute('lease://acme/**').ok, false);
    assert.equal(parseRoute('lease://Acme/R/d:1@x~y_z.w').ok, true, 'case and the full charset are kept');
    assert.equal(parseRoute('lease://acme/renderers/doc-1/').ok, false);
  });

  test('routeSegments splits a route into its three segments', () => {
    assert.deepEqual(routeSegments('lease://a/b/c'), ['a', 'b', 'c']);
  });
});

describe('matching and containment', () => {
  const seg = (r: string) => routeSegments(r);

  test('wildcards match whole segments only', () => {
    const t = selectorOrThrow('lease://acme/renderers/*').triple;
    assert.equal(matches(t, seg('lease://acme/renderers/doc-1')), true);
    assert.equal(matches(t, seg('lease://acme/render/doc-1')), false);
    assert.equal(matches(t, seg('lease://acme2/renderers/doc-1')), false);
    assert.equal(matches(selectorOrThrow('lease://**/doc-1').triple, seg('lease://x/y/doc-1')), true);
    assert.equal(matches(selectorOrThrow('lease://**/doc-1').triple, seg('lease://x/y/doc-2')), false);
  });

  test('a selector contains every selector whose matches it covers', () => {
    const t = (s: string) => selectorOrThrow(s).triple;
    assert.equal(contains(t('lease://acme/**'), t('lease://acme/renderers/*')), true);
    assert.equal(contains(t('lease://acme/renderers/*'), t('lease://acme/**')), false);
    assert.equal(contains(t('lease://**'), t('lease://*/*/x')), true);
    assert.equal(contains(t('lease://*/*/x'), t('lease://**')), false);
    assert.equal(contains(t('lease://acme/*/doc-1'), t('lease://acme/renderers/doc-1')), true);
    assert.equal(contains(t('lease://acme/*/doc-1'), t('lease://acme/renderers/*')), false, 'overlap is not containment');
    assert.equal(contains(t('lease://acme/renderers/doc-1'), t('lease://acme/renderers/doc-1')), true);
    assert.equal(contains(t('lease://acme/**'), t('lease://acme/*/*')), true, 'equivalent spellings contain each other');
    assert.equal(contains(t('lease://acme/*/*'), t('lease://acme/**')), true);
  });
});

describe('grants', () => {
  test('parse selector#permission', () => {
    const g = parseGrant('lease://acme/**#read');
    assert.equal(g.ok && g.value.permission, 'read');
    assert.equal(parseGrant('lease://acme/**').ok, false);
    assert.equal(parseGrant('lease://acme/**#owner').ok, false);
    assert.equal(parseGrant('lease://acme/doc*#read').ok, false);
  });

  test('one grant must contain the whole target; partial grants are never unioned', () => {
    const gs = ['lease://acme/renderers/*#read', 'lease://acme/other/*#read'].map((t) => {
      const r = parseGrant(t);
      assert.ok(r.ok);
      return r.value;
    });
    assert.ok(allowingGrant(gs, selectorOrThrow('lease://acme/renderers/*').triple, 'read'));
    assert.equal(allowingGrant(gs, selectorOrThrow('lease://acme/**').triple, 'read'), undefined);
    assert.equal(allowingGrant(gs, selectorOrThrow('lease://acme/renderers/x').triple, 'write'), undefined, 'read does not imply write');
  });

  test('admin implies write and read', () => {
    const r = parseGrant('lease://acme/**#admin');
    assert.ok(r.ok);
    const t = selectorOrThrow('lease://acme/a/b').triple;
    for (const p of ['read', 'write', 'admin'] as const) assert.ok(allowingGrant([r.value], t, p));
  });
});
