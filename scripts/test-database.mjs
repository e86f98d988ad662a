// Create or drop a `leasehold_test_*` PostgreSQL database, synchronously
// usable from configuration code (playwright.config.ts) through
// execFileSync: `node scripts/test-database.mjs create` prints the new
// database's URL; `node scripts/test-database.mjs drop <url>` drops it.
// The server is LEASEHOLD_TEST_DATABASE_URL's, else the local one
// (the same rule as server/testing/pg.ts).
import { randomBytes } from 'node:crypto';
import pg from 'pg';

const admin = process.env.LEASEHOLD_TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const [cmd, arg] = process.argv.slice(2);
const c = new pg.Client({ connectionString: admin, connectionTimeoutMillis: 5_000 });
await c.connect();
try {
  if (cmd === 'create') {
    const name = `leasehold_test_${randomBytes(6).toString('hex')}`;
    await c.query(`CREATE DATABASE ${name}`);
    const u = new URL(admin);
    u.pathname = `/${name}`;
    process.stdout.write(u.toString());
  } else if (cmd === 'drop' && arg) {
    const name = new URL(arg).pathname.slice(1);
    if (!/^leasehold_test_[0-9a-f]+$/.test(name)) throw new Error(`not a test database: ${name}`);
    await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  } else {
    throw new Error('usage: test-database.mjs create | drop <url>');
  }
} finally {
  await c.end();
}
