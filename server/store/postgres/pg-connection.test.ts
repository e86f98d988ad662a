/**
 * `quoteLiteral` writes the same SQL literal as node-postgres's
 * `escapeLiteral` (the batch's flush used that before), for strings with and
 * without quotes and backslashes; and PostgreSQL reads each back as the
 * string itself.
 */

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { quoteLiteral } from './pg-connection';
import { createTestDatabase, type TestDatabase } from '../../testing/pg';

const CASES = ['', 'abc', "it's", "''", 'a\\b', '\\\\', "a\\'b", "\\'\\'", 'é\'\\', 'x\u00e9\u{1F600}', '{"o":"i_x","k":"ev","e":[{"route":"lease://a/b c"}]}', '{"reason":"say \\"no\\" it\'s fine"}'];

test('quoteLiteral: the text of pg escapeLiteral', () => {
  const c = new pg.Client();
  for (const s of CASES) assert.equal(quoteLiteral(s), c.escapeLiteral(s), JSON.stringify(s));
});

let db: TestDatabase;
before(async () => {
  db = await createTestDatabase();
});
after(async () => {
  await db?.drop();
});

test('quoteLiteral: PostgreSQL reads each literal back as the string', async () => {
  const c = new pg.Client({ connectionString: db.url });
  await c.connect();
  try {
    const r = await c.query<{ v: string }>(CASES.map((s) => `SELECT ${quoteLiteral(s)} AS v`).join(' UNION ALL '));
    assert.deepEqual(
      r.rows.map((x) => x.v),
      CASES,
    );
  } finally {
    await c.end();
  }
});
