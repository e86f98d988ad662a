/**
 * Test support: several real server processes (`node dist/server.mjs`) on
 * one fresh PostgreSQL database, each with its own port and data directory.
 */

import { rmSync } from 'node:fs';
import { call, leasePath, rid, tempDir, type CallOptions, type Reply } from './harness';
import { spawnServer, stopServer, type ServerProcess } from './process';
import { createTestDatabase, type TestDatabase } from './pg';

export interface Instance {
  name: string;
  proc: ServerProcess;
  url: string;
  dataDir: string;
  call(method: string, path: string, body?: unknown, opts?: CallOptions): Promise<Reply>;
}

export interface Instances {
  db: TestDatabase;
  token: string;
  list: Instance[];
  /** Start one more instance on the same database (`env` adds to the shared environment). */
  start(name: string, env?: Record<string, string>): Promise<Instance>;
  openSession(on: Instance, ownerId?: string, ttlMs?: number): Promise<string>;
  acquire(on: Instance, route: string, sessionId: string, extra?: Record<string, unknown>): Promise<Reply>;
  release(on: Instance, route: string, sessionId: string, lease: { lease_id: string; fencing_token: number }): Promise<Reply>;
  close(): Promise<void>;
}

/** Start `n` instances (A, B, C, …) on a fresh database; `env` is given to every instance. */
export async function startInstances(n: number, env: Record<string, string> = {}, database?: TestDatabase): Promise<Instances> {
  const db = database ?? (await createTestDatabase({ migrated: true }));
  const token = `lh_multi_${Math.random().toString(36).slice(2)}_bootstrap`;
  const dirs: string[] = [];
  const out: Instances = {
    db,
    token,
    list: [],
    async start(name, extra = {}) {
      const dataDir = tempDir(`leasehold-${name}-`);
      dirs.push(dataDir);
      const proc = await spawnServer({ LEASEHOLD_DATABASE_URL: db.url, LEASEHOLD_DATA_DIR: dataDir, LEASEHOLD_BOOTSTRAP_TOKEN: token, ...env, ...extra });
      const inst: Instance = {
        name,
        proc,
        url: proc.url,
        dataDir,
        call: (method, path, body, o = {}) => call(proc.url, method, path, body, { ...o, token: o.token === null ? undefined : (o.token ?? token) }),
      };
      out.list.push(inst);
      return inst;
    },
    async openSession(on, ownerId = 'worker', ttlMs = 15_000) {
      const r = await on.call('POST', '/api/v1/sessions', { owner_id: ownerId, ttl_ms: ttlMs });
      if (r.status !== 201) throw new Error(`openSession on ${on.name}: ${r.status} ${r.text}`);
      return r.body.session.session_id as string;
    },
    acquire(on, route, sessionId, extra = {}) {
      return on.call('POST', leasePath(route, 'acquire'), { session_id: sessionId, request_id: rid(), ...extra });
    },
    release(on, route, sessionId, lease) {
      return on.call('POST', leasePath(route, 'release'), { session_id: sessionId, request_id: rid(), lease_id: lease.lease_id, fencing_token: lease.fencing_token });
    },
    async close() {
      await Promise.all(out.list.map((i) => stopServer(i.proc.proc, 'SIGKILL').catch(() => undefined)));
      for (const d of dirs) rmSync(d, { recursive: true, force: true });
      if (!database) await db.drop();
    },
  };
  // All at once: migrations, the secret and the bootstrap token happen exactly once whoever wins.
  await Promise.all(Array.from({ length: n }, (_, i) => out.start(String.fromCharCode(65 + i))));
  out.list.sort((a, b) => a.name.localeCompare(b.name));
  return out;
}
