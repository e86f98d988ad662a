import { test } from 'node:test';
import assert from 'node:assert/strict';
import { codePoints, identifierProblem } from './identifiers';

test('plain names in any script, with emoji, are accepted', () => {
  for (const ok of ['worker-1', 'renderer fleet (production)', '日本の作業者', 'ÉQUIPE', '😀 bot', 'a.b_c']) assert.equal(identifierProblem(ok), undefined, ok);
});

test('bidi controls, zero-width and format characters, control characters and lone surrogates are each refused with their reason', () => {
  const cases: Array<[string, RegExp]> = [
    ['admin\u202Etxt.exe', /bidirectional/],
    ['a\u2066b\u2069', /bidirectional/],
    ['a\u200Fb', /bidirectional/],
    ['a\u061Cb', /bidirectional/],
    ['ad\u200Bmin', /zero-width/],
    ['ad\u200Dmin', /zero-width/],
    ['\uFEFFadmin', /zero-width/],
    ['ad\u2060min', /zero-width/],
    ['a\u00ADb', /zero-width/],
    ['a\u0007b', /control/],
    ['a\u007Fb', /control/],
    ['a\uD800b', /surrogate/],
    ['a\uDFFFb', /surrogate/],
  ];
  for (const [text, reason] of cases) assert.match(identifierProblem(text) ?? 'accepted', reason, JSON.stringify(text));
});

test('code points count a surrogate pair once', () => {
  assert.equal(codePoints('😀😀'), 2);
  assert.equal(codePoints(''), 0);
});
