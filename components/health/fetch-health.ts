export type HealthOk = {
  status: 'ok';
  store: string;
  epoch: string;
  version: string;
  uptimeMs: number;
};

/** The service answered, but its store is down (HTTP 503). */
export type HealthUnavailable = { status: 'unavailable'; store: string };

export type Health = HealthOk | HealthUnavailable;

/** The service could not be reached, or answered something that is not a health report. */
export class HealthError extends Error {
  constructor(
    message: string,
    readonly correlationId?: string,
  ) {
    super(message);
    this.name = 'HealthError';
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null;
}

/**
 * GET /api/v1/health. The body is plain JSON, not the API envelope (docs/semantics.md "The wire"):
 * 200 `{ status: "ok", store, epoch, version, uptime_ms }`, 503 `{ status: "unavailable", store }`.
 * Anything else throws HealthError.
 */
export async function fetchHealth(signal?: AbortSignal): Promise<Health> {
  let res: Response;
  try {
    res = await fetch('/api/v1/health', { signal, cache: 'no-store', headers: { accept: 'application/json' } });
  } catch (err: unknown) {
    if (err instanceof DOMException && err.name === 'AbortError') throw err;
    throw new HealthError('The service did not answer.');
  }
  const correlationId = res.headers.get('x-correlation-id') ?? undefined;
  const body: unknown = res.headers.get('content-type')?.includes('application/json')
    ? await res.json().catch(() => undefined)
    : undefined;

  if (res.status === 200 && isRecord(body) && body.status === 'ok') {
    return {
      status: 'ok',
      store: String(body.store ?? 'unknown'),
      epoch: String(body.epoch ?? ''),
      version: String(body.version ?? ''),
      uptimeMs: typeof body.uptime_ms === 'number' ? body.uptime_ms : 0,
    };
  }
  if (res.status === 503 && isRecord(body) && body.status === 'unavailable') {
    return { status: 'unavailable', store: String(body.store ?? 'unknown') };
  }
  throw new HealthError(`Unexpected answer: HTTP ${res.status}.`, correlationId);
}

/** "2 d 4 h", "3 h 12 min", "5 min 8 s", "42 s": two units are enough to read at a glance. */
export function formatUptime(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  const d = Math.floor(s / 86_400);
  const h = Math.floor((s % 86_400) / 3_600);
  const m = Math.floor((s % 3_600) / 60);
  if (d > 0) return `${d} d ${h} h`;
  if (h > 0) return `${h} h ${m} min`;
  if (m > 0) return `${m} min ${s % 60} s`;
  return `${s} s`;
}
