/**
 * Test support: a TCP proxy the test controls, between server instances and
 * PostgreSQL, to cut them off the database (and restore them) without ever
 * touching the shared PostgreSQL server itself.
 */

import { createServer, connect, type Server, type Socket } from 'node:net';
import { urlFor } from './pg';

export interface TcpProxy {
  port: number;
  /**
   * Cut the database off until `restore()`: `reset` destroys every open
   * connection and refuses new ones; `stall` keeps every connection open
   * but silently drops what either side sends (a network partition).
   */
  cut(mode?: 'reset' | 'stall'): void;
  restore(): void;
  close(): Promise<void>;
}

/** Listen on a free loopback port and forward to `host:port`. */
export async function startTcpProxy(targetHost: string, targetPort: number): Promise<TcpProxy> {
  let state: 'open' | 'reset' | 'stall' = 'open';
  const sockets = new Set<Socket>();
  const track = (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
    s.on('error', () => s.destroy());
  };
  const server: Server = createServer((client) => {
    track(client);
    if (state === 'reset') {
      client.destroy();
      return;
    }
    const upstream = connect(targetPort, targetHost);
    track(upstream);
    client.on('data', (d) => state === 'open' && upstream.write(d));
    upstream.on('data', (d) => state === 'open' && client.write(d));
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const port = (server.address() as { port: number }).port;
  return {
    port,
    cut(mode = 'reset') {
      state = mode;
      if (mode === 'reset') for (const s of sockets) s.destroy();
    },
    restore() {
      // Stalled connections stay broken (bytes were lost): cut them so both ends notice.
      if (state === 'stall') for (const s of sockets) s.destroy();
      state = 'open';
    },
    close() {
      state = 'reset';
      for (const s of sockets) s.destroy();
      return new Promise((r) => server.close(() => r()));
    },
  };
}

/** A proxy in front of a test database, and the database's URL through it (the instances' LEASEHOLD_DATABASE_URL). */
export async function proxyDatabase(db: { url: string; name: string }): Promise<{ proxy: TcpProxy; url: string }> {
  const target = new URL(db.url);
  const proxy = await startTcpProxy(target.hostname, Number(target.port || 5432));
  const viaProxy = new URL(urlFor(db.name));
  viaProxy.hostname = '127.0.0.1';
  viaProxy.port = String(proxy.port);
  return { proxy, url: viaProxy.toString() };
}
