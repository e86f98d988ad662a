/**
 * Cross-instance messages over LISTEN/NOTIFY. Steps broadcast with
 * `pg_notify` inside their transaction, so a message is delivered if and
 * only if its step commits, and (PostgreSQL's guarantee) in commit order.
 * Each instance keeps one dedicated connection listening; it is pinged
 * every second, and a connection that errors, ends or does not answer a
 * ping within two seconds is destroyed, reported `lost()`, and replaced
 * (`ready()` again once listening, with the families' revisions read after
 * LISTEN took effect).
 */

import pg from 'pg';
import type { Bus, BusListener } from '../types';
import { connectionConfig, destroy, guard } from './pg-connection';
import { BUS_APP_PREFIX, CHANNEL } from './pg-connection';

const PING_MS = 1_000;
const PING_TIMEOUT_MS = 2_000;
const RETRY_MS = 250;

export class PgBus implements Bus {
  private listener: BusListener | undefined;
  private client: pg.Client | undefined;
  private connected = false;
  private closed = false;
  private pinger: ReturnType<typeof setInterval> | undefined;
  private retry: ReturnType<typeof setTimeout> | undefined;

  constructor(
    private readonly url: string,
    readonly instanceId: string,
    private readonly pool: pg.Pool,
  ) {}

  /** The application_name of this instance's listening connection (how `alive` finds it). */
  static applicationName(instanceId: string): string {
    return `${BUS_APP_PREFIX}${instanceId}`;
  }

  listen(listener: BusListener): void {
    if (this.listener) throw new Error('the bus already has its listener');
    this.listener = listener;
    void this.connect();
  }

  private async connect(): Promise<void> {
    if (this.closed) return;
    const client = new pg.Client(connectionConfig(this.url, 2_000, PgBus.applicationName(this.instanceId)));
    this.client = client;
    let gone = false;
    const fail = () => {
      if (gone) return;
      gone = true;
      if (this.pinger) clearInterval(this.pinger);
      this.pinger = undefined;
      client.removeAllListeners('notification');
      destroy(client);
      if (this.connected) {
        this.connected = false;
        this.listener?.lost();
      }
      if (!this.closed) this.retry = setTimeout(() => void this.connect(), RETRY_MS);
    };
    client.on('error', fail);
    client.on('end', fail);
    try {
      await client.connect();
      client.on('notification', (m) => {
        if (m.channel === CHANNEL && m.payload !== undefined) this.listener?.message(m.payload);
      });
      await client.query(`LISTEN ${CHANNEL}`);
      const r = await client.query<{ family: string; revision: number }>('SELECT family, revision FROM families');
      if (gone || this.closed) return;
      this.connected = true;
      this.pinger = setInterval(() => {
        const t = setTimeout(fail, PING_TIMEOUT_MS);
        client.query('SELECT 1').then(
          () => clearTimeout(t),
          () => {
            clearTimeout(t);
            fail();
          },
        );
      }, PING_MS);
      this.pinger.unref?.();
      this.listener?.ready(new Map(r.rows.map((x) => [x.family, Number(x.revision)])));
    } catch {
      fail();
    }
  }

  async send(message: string): Promise<void> {
    await this.bounded((c) => c.query('SELECT pg_notify($1, $2)', [CHANNEL, message]));
  }

  async alive(instanceId: string): Promise<boolean> {
    const r = await this.bounded((c) => c.query('SELECT 1 FROM pg_stat_activity WHERE application_name = $1', [PgBus.applicationName(instanceId)]));
    return (r.rowCount ?? 0) > 0;
  }

  /** One statement on a pooled connection, abandoned (connection destroyed) after 2 s: it never hangs. */
  private async bounded<T>(fn: (c: pg.PoolClient) => Promise<T>): Promise<T> {
    const c = await this.pool.connect();
    guard(c);
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      destroy(c);
    }, PING_TIMEOUT_MS);
    try {
      return await fn(c);
    } catch (e) {
      throw timedOut ? new Error('postgres: no answer within 2 s') : e;
    } finally {
      clearTimeout(timer);
      c.release(timedOut ? true : undefined);
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.retry) clearTimeout(this.retry);
    if (this.pinger) clearInterval(this.pinger);
    const c = this.client;
    this.client = undefined;
    if (c) {
      c.removeAllListeners('end');
      c.removeAllListeners('error');
      c.on('error', () => undefined);
      await Promise.race([c.end().catch(() => undefined), new Promise((r) => setTimeout(r, 1_000).unref())]);
    }
  }
}
