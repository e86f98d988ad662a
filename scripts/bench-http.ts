/**
 * The benchmarks' HTTP client: undici, one keep-alive pool per server (closed-loop
 * workers each keep one connection busy), JSON in and out with a bearer token.
 * An answer that is not JSON keeps its text as the body.
 */
import { Pool } from 'undici';

export interface BenchAnswer {
  status: number;
  body: any;
}

const pools = new Map<string, Pool>();

function poolFor(url: string): Pool {
  let pool = pools.get(url);
  if (!pool) {
    pool = new Pool(url, { connections: 256, pipelining: 1, keepAliveTimeout: 60_000 });
    pools.set(url, pool);
  }
  return pool;
}

export async function sendJson(url: string, token: string, method: string, path: string, body?: unknown): Promise<BenchAnswer> {
  const res = await poolFor(url).request({
    method: method as 'GET',
    path,
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.body.text();
  let parsed: unknown = text;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    // Not JSON: keep the text.
  }
  return { status: res.statusCode, body: parsed };
}

/** Close every pool (a benchmark that restarts its server on the same port starts afresh). */
export async function closePools(): Promise<void> {
  await Promise.all([...pools.values()].map((p) => p.close()));
  pools.clear();
}
