/**
 * `run <route> -- <command…>`: hold a lease while a command runs, like
 * `consul lock` and `etcdctl lock`, so a cron job becomes a singleton.
 *
 * - The child gets LEASEHOLD_ROUTE, LEASEHOLD_FENCING_TOKEN (pass it to
 *   whatever the job writes to, and have that store check it) and
 *   LEASEHOLD_LEASE_ID, besides `run`'s own environment less the credential:
 *   LEASEHOLD_TOKEN is removed unless `--pass-token`, which sets it (and
 *   LEASEHOLD_URL) to the token and server `run` itself uses.
 * - When the lease is lost (a force-release, a revoke, expiry after a
 *   partition) the child gets SIGTERM, then SIGKILL after `--grace`, and
 *   `run` exits 4. Loss is noticed at the next renewal (a third of the TTL)
 *   or at once when the live feed reports a change on the route.
 * - When someone asks the holder to release (a release request), the child
 *   gets SIGTERM (unless `--ignore-release-requests`); the lease is released
 *   when it exits and `run` exits with its code. Noticed at once through the
 *   feed when the token may read the route, else at the next renewal.
 * - The child runs in a process group (and session) of its own, and every
 *   signal goes to that whole group: a loss or a release request stops what
 *   the command started too (`sh -c 'a & b'`), not only the command itself.
 * - SIGINT, SIGTERM, SIGHUP and SIGQUIT sent to `run` are passed on to the
 *   child's group (at a terminal, Ctrl-C reaches `run`, which passes it on).
 * - When the child exits the lease is released and `run` exits with the
 *   child's code (128 + the signal number if a signal ended it).
 * - A held route exits 3 at once, or after `--wait` in the route's FIFO queue
 *   (saying on stderr that it is queued, and behind whom). `--wait` takes
 *   any duration: the SDK re-issues the wait with the server's queue ticket
 *   every 30 s, so it keeps its place throughout; Ctrl-C gives it up.
 * - `--all ROUTE ROUTE… -- <command…>` holds several leases at once: it
 *   acquires every route or none (`session.acquireAll`; a held route exits 3
 *   naming the routes that were held, and nothing is acquired; it never
 *   waits), gives the child LEASEHOLD_ROUTES, LEASEHOLD_FENCING_TOKENS and
 *   LEASEHOLD_LEASE_IDS (space-separated, in the order given) instead of the
 *   single-lease variables, renews them in one batched request per tick, and
 *   treats the loss of any as the loss of all (SIGTERM, SIGKILL after the
 *   grace, exit 4).
 */

import { spawn, type ChildProcess } from 'node:child_process';
import { constants, hostname } from 'node:os';
import type { Command } from 'commander';
import { isLeaseholdError, type LeaseHandle, type LeaseholdClient, type Session } from '../../lib/client/index';
import { CliError, EXIT } from '../errors';
import { shortDuration } from '../format';
import { clientFor, durationArg, example, note, withConnection, type CommonOptions } from '../common';
import { resolveConnection } from '../connection';

interface RunOptions extends CommonOptions {
  ttl?: number;
  wait?: number;
  owner?: string;
  grace?: number;
  ignoreReleaseRequests?: boolean;
  passToken?: boolean;
  all?: string[];
}

const FORWARDED = ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGQUIT'] as const;
/**
 * The environment variables the command line takes its credential from
 * (cli/connection.ts): never passed to the command without `--pass-token`.
 * `--token-file` is an argument, so its path is not in the environment; the
 * saved login is a file, which the command, as the same user, can read.
 */
const CREDENTIAL_VARS: ReadonlySet<string> = new Set(['LEASEHOLD_TOKEN']);
/** What `run` sets for the child's leases; an outer `run`'s are removed first, so the child sees only its own. */
const LEASE_VARS = ['LEASEHOLD_ROUTE', 'LEASEHOLD_FENCING_TOKEN', 'LEASEHOLD_LEASE_ID', 'LEASEHOLD_ROUTES', 'LEASEHOLD_FENCING_TOKENS', 'LEASEHOLD_LEASE_IDS'] as const;

export function registerRun(program: Command): void {
  example(
    withConnection(
      program
        .command('run')
        .description(
          'hold a lease while a command runs; the child gets LEASEHOLD_ROUTE, LEASEHOLD_FENCING_TOKEN and LEASEHOLD_LEASE_ID, but not LEASEHOLD_TOKEN (unless --pass-token), and is stopped if the lease is lost (exit 4)',
        )
        .argument('<route>', 'the lease to hold, e.g. lease://acme/cron/nightly-report (with --all, the command)')
        .argument('[command...]', 'the command and its arguments, after --')
        .option('--all <routes...>', 'hold every one of these routes or none (at most 16; never waits); the child gets LEASEHOLD_ROUTES, LEASEHOLD_FENCING_TOKENS and LEASEHOLD_LEASE_IDS, space-separated in this order, and is stopped if any is lost')
        .option('--ttl <duration>', 'lease TTL, renewed at a third of it (default 30s)', durationArg)
        .option('--wait <duration>', 'wait this long in the route\'s queue if it is held, keeping its place however long (any duration, e.g. 2h; default: exit 3 at once)', durationArg)
        .option('--owner <owner>', 'owner id shown to others (default: host:pid)')
        .option('--grace <duration>', 'after SIGTERM on loss, SIGKILL this much later (default 10s)', durationArg)
        .option('--ignore-release-requests', 'keep the command running when someone asks the holder to release (default: SIGTERM it)')
        .option('--pass-token', "give the command run's own token and server as LEASEHOLD_TOKEN and LEASEHOLD_URL, for a job that calls the API itself (default: LEASEHOLD_TOKEN is removed from its environment)"),
    ).action(async (route: string, command: string[], opts: RunOptions) => {
      process.exitCode = opts.all !== undefined ? await runAll(clientFor(opts), opts.all, [route, ...command], opts) : await run(clientFor(opts), route, command, opts);
    }),
    "leasehold run lease://acme/cron/nightly-report --ttl 30s -- ./nightly-report.sh --since yesterday",
    'leasehold run lease://acme/cron/backup --wait 5m -- sh -c \'pg_dump app > "/backups/$LEASEHOLD_FENCING_TOKEN.sql"\'',
    'leasehold run lease://acme/cron/sync --pass-token -- ./sync.sh   # sync.sh calls the API with $LEASEHOLD_TOKEN',
    'leasehold run --all lease://acme/db/orders lease://acme/db/invoices -- ./migrate.sh   # both or neither',
  );
}

/** What `run` and `run --all` both start with: their timings, what --pass-token passes, and the session that will hold the leases. */
async function openRunSession(client: LeaseholdClient, opts: RunOptions) {
  const ttlMs = opts.ttl ?? 30_000;
  const graceMs = opts.grace ?? 10_000;
  const ownerId = opts.owner ?? `${hostname()}:${process.pid}`;
  // Read before acquiring: with --pass-token, the token and server the client was made with.
  const pass = opts.passToken === true ? resolveConnection(opts) : undefined;
  // The session lives as long as the lease would without it, within the
  // server's bounds (2 s to 300 s): losing it loses the lease too.
  const session = await client.openSession({ ownerId, ttlMs: Math.min(300_000, Math.max(2_000, ttlMs)) });
  return { ttlMs, graceMs, pass, session };
}

async function run(client: LeaseholdClient, route: string, command: string[], opts: RunOptions): Promise<number> {
  const { ttlMs, graceMs, pass, session } = await openRunSession(client, opts);
  try {
    const lease = await acquire(client, session, route, ttlMs, opts.wait ?? 0);
    if (lease === undefined) return 128 + constants.signals.SIGINT;
    const env = childEnv(process.env, [lease], false, pass);
    return await supervise(client, [lease], command, env, graceMs, opts.ignoreReleaseRequests === true);
  } finally {
    await session.close().catch(() => {});
  }
}

/** `run --all`: every route or none, held while the command runs; the loss of any is the loss of all. */
async function runAll(client: LeaseholdClient, routes: string[], command: string[], opts: RunOptions): Promise<number> {
  if (opts.wait !== undefined) throw new CliError('--all never waits (waiting for several routes is how deadlocks start): drop --wait', EXIT.usage);
  if (routes.length > MAX_ALL) throw new CliError(`--all takes at most ${MAX_ALL} routes (got ${routes.length})`, EXIT.usage);
  if (new Set(routes).size !== routes.length) throw new CliError('--all takes each route once', EXIT.usage);
  const { ttlMs, graceMs, pass, session } = await openRunSession(client, opts);
  try {
    let leases: LeaseHandle[];
    try {
      leases = await session.acquireAll(routes, { ttlMs });
    } catch (e) {
      if (!isLeaseholdError(e, 'lease_conflict')) throw e;
      const held = e.held ?? [];
      const what = held.length === 0 ? 'a route is held' : `${held.join(', ')} ${held.length === 1 ? 'is' : 'are'} held`;
      throw new CliError(`${what}; nothing was acquired (--all takes every route or none)`, EXIT.conflict, e);
    }
    const env = childEnv(process.env, leases, true, pass);
    return await supervise(client, leases, command, env, graceMs, opts.ignoreReleaseRequests === true);
  } finally {
    await session.close().catch(() => {});
  }
}

/** Routes of one `run --all` at most (the server's all-or-nothing acquire takes 16). */
const MAX_ALL = 16;

/** Acquire, queueing up to `waitMs` (any duration: the SDK keeps the place across requests with its queue ticket); undefined when interrupted while waiting. */
async function acquire(client: LeaseholdClient, session: Session, route: string, ttlMs: number, waitMs: number): Promise<LeaseHandle | undefined> {
  const interrupted = new AbortController();
  const onSignal = (): void => interrupted.abort();
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  // A waiting acquire is silent until it ends: say, once, that it is queued and behind whom.
  let settled = false;
  const queued = waitMs > 0 ? setTimeout(() => void announceQueued(client, session, route, waitMs, () => settled), QUEUED_NOTE_MS) : undefined;
  try {
    try {
      return await session.acquire(route, { ttlMs, waitMs, signal: interrupted.signal });
    } catch (e) {
      if (interrupted.signal.aborted) return undefined;
      if (!isLeaseholdError(e, 'lease_conflict')) throw e;
      const holder = await client.inspect(route).catch(() => undefined);
      const who = holder ? ` by ${holder.owner_id} (fencing token ${holder.fencing_token}, expires in ${shortDuration(holder.remaining_ms)})` : '';
      throw new CliError(`${route} is held${who}${waitMs > 0 ? ` after waiting ${shortDuration(waitMs)}` : '; --wait to queue for it'}`, EXIT.conflict, e);
    }
  } finally {
    settled = true;
    clearTimeout(queued);
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}

/** An acquire still pending this long is waiting in the route's queue. */
const QUEUED_NOTE_MS = 250;

async function announceQueued(client: LeaseholdClient, session: Session, route: string, waitMs: number, settled: () => boolean): Promise<void> {
  const holder = await client.inspect(route).catch(() => undefined);
  if (settled() || holder?.holder_incarnation === session.holderIncarnation) return;
  const what = holder ? `${route} is held by ${holder.owner_id} (fencing token ${holder.fencing_token}, expires in ${shortDuration(holder.remaining_ms)}); queued for it` : `queued for ${route}`;
  note(`leasehold: ${what}, waiting up to ${shortDuration(waitMs)}`);
}

/**
 * The command's environment: `run`'s own without the credential variables,
 * plus the lease's route, fencing token and id (for `--all`, every lease's,
 * space-separated in the order given); with `pass` (`--pass-token`), the
 * token and server `run` uses, wherever it found them.
 */
function childEnv(parent: NodeJS.ProcessEnv, leases: readonly Pick<LeaseHandle, 'route' | 'fencingToken' | 'leaseId'>[], all: boolean, pass?: { url: string; token: string | undefined }): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...parent };
  // Windows names environment variables without regard to case.
  const fold = process.platform === 'win32' ? (k: string): string => k.toUpperCase() : (k: string): string => k;
  for (const k of Object.keys(env)) if (CREDENTIAL_VARS.has(fold(k))) delete env[k];
  if (pass !== undefined) {
    env.LEASEHOLD_URL = pass.url;
    if (pass.token !== undefined) env.LEASEHOLD_TOKEN = pass.token;
  }
  for (const k of LEASE_VARS) delete env[k];
  const [lease] = leases;
  if (!all && lease !== undefined) {
    env.LEASEHOLD_ROUTE = lease.route;
    env.LEASEHOLD_FENCING_TOKEN = String(lease.fencingToken);
    env.LEASEHOLD_LEASE_ID = lease.leaseId;
  } else {
    // Routes, tokens and lease ids hold no spaces: `for r in $LEASEHOLD_ROUTES` works.
    env.LEASEHOLD_ROUTES = leases.map((l) => l.route).join(' ');
    env.LEASEHOLD_FENCING_TOKENS = leases.map((l) => String(l.fencingToken)).join(' ');
    env.LEASEHOLD_LEASE_IDS = leases.map((l) => l.leaseId).join(' ');
  }
  return env;
}

/** Runs the child under its leases (one, or `--all`'s); resolves with `run`'s exit code. The loss of any is the loss of all. */
async function supervise(client: LeaseholdClient, leases: readonly LeaseHandle[], command: string[], env: NodeJS.ProcessEnv, graceMs: number, ignoreReleaseRequests: boolean): Promise<number> {
  const [file, ...args] = command;
  if (file === undefined) throw new CliError('no command given after --', EXIT.usage);
  // Its own process group (and session), so that a signal reaches whatever
  // the command started as well (`sh -c 'a & b'`). stdio stays inherited, and
  // the signals `run` gets are passed on to the group: at a terminal, Ctrl-C
  // reaches `run` (the child is not in the terminal's foreground group), which
  // passes it on once. Windows has no process groups (and `detached` would give
  // the child a console of its own): there only the child is signalled.
  const child = spawn(file, args, { stdio: 'inherit', env, detached: GROUPS });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null; error?: Error }>((resolve) => {
    child.once('exit', (code, signal) => resolve({ code, signal }));
    child.once('error', (error) => resolve({ code: null, signal: null, error }));
  });
  const group = new ChildGroup(child);

  const forward = (sig: NodeJS.Signals): void => {
    group.kill(sig);
  };
  for (const sig of FORWARDED) process.on(sig, forward);

  let lost = false;
  let asked = false;
  let killAt = 0;
  let killTimer: NodeJS.Timeout | undefined;
  const cleanups: (() => void)[] = [];
  for (const lease of leases) {
    const onLost = (): void => {
      if (lease.state !== 'lost' || lost) return; // released by us: not a loss; or another lease was lost first
      lost = true;
      note(`leasehold: the lease on ${lease.route} was lost (${lease.lostReason?.message ?? 'unknown'}); sending SIGTERM, SIGKILL in ${shortDuration(graceMs)}`);
      group.kill('SIGTERM');
      killAt = Date.now() + graceMs;
      killTimer = setTimeout(() => group.kill('SIGKILL'), graceMs);
    };
    lease.signal.addEventListener('abort', onLost, { once: true });

    // A release request asks the command to finish: SIGTERM once (no SIGKILL:
    // the lease is still held), then the lease is released when it exits.
    const onReleaseRequested = (): void => {
      const request = lease.releaseRequest;
      if (ignoreReleaseRequests) {
        note(`leasehold: release of ${lease.route} requested (${request?.reason ?? 'no reason'}); ignored (--ignore-release-requests)`);
        return;
      }
      if (asked) return;
      asked = true;
      note(`leasehold: release of ${lease.route} requested (${request?.reason ?? 'no reason'}); sending SIGTERM`);
      group.kill('SIGTERM');
    };
    lease.releaseRequested.addEventListener('abort', onReleaseRequested, { once: true });
    cleanups.push(() => {
      lease.signal.removeEventListener('abort', onLost);
      lease.releaseRequested.removeEventListener('abort', onReleaseRequested);
    });
  }

  // Renewals notice a loss within a third of the TTL; the feed, when the token
  // may read the routes, tells at once: any change on one other than our own
  // acquisition makes its handle check with a renewal.
  const byRoute = new Map(leases.map((l) => [l.route, l]));
  const feed = client.subscribe([...byRoute.keys()]);
  feed.opened.catch(() => {});
  // A release_requested notice for a lease makes it renew too, so the
  // request (listed in the renew answer) is seen at once.
  feed.on((ev) => {
    if (ev.type !== 'change' && ev.type !== 'release_requested') return;
    const lease = byRoute.get(ev.route);
    if (lease === undefined || lease.state !== 'held') return;
    const changed = ev.type === 'change' && ev.revision > lease.lease.revision;
    const askedNow = ev.type === 'release_requested' && ev.fencing_token === lease.fencingToken && lease.releaseRequest === undefined;
    if (changed || askedNow) lease.renew().catch(() => {});
  });

  const result = await exited;
  // Lost: what the command started may outlive it (a background job that
  // ignores SIGTERM). It gets the rest of the grace, then SIGKILL; signals to
  // `run` still reach it meanwhile.
  if (lost && (await group.endsBy(killAt)) === false) group.kill('SIGKILL');
  for (const sig of FORWARDED) process.off(sig, forward);
  if (killTimer !== undefined) clearTimeout(killTimer);
  for (const cleanup of cleanups) cleanup();
  feed.close();

  if (result.error) {
    await Promise.all(leases.map((l) => l.release().catch(() => {})));
    throw new CliError(`could not start ${file}: ${result.error.message}`, 127);
  }
  if (lost) return EXIT.lost;
  for (const lease of leases) {
    try {
      await lease.release();
    } catch (e) {
      // The command's work is done either way: report, and keep its exit code.
      if (isLeaseholdError(e, 'lease_lost')) note(`leasehold: the lease on ${lease.route} was already lost when the command ended`);
      else note(`leasehold: could not release ${lease.route} (${e instanceof Error ? e.message : String(e)}); it expires by itself within its TTL`);
    }
  }
  if (result.code !== null) return result.code;
  return 128 + (result.signal ? (constants.signals[result.signal] ?? 0) : 0);
}

/** Whether the child gets a process group of its own (not on Windows, which has none). */
const GROUPS = process.platform !== 'win32';

/** The child's process group, signalled as a whole (only the child itself on Windows). */
class ChildGroup {
  constructor(readonly child: ChildProcess) {}

  /** Send `sig` to every process in the group; a group already gone is not an error. */
  kill(sig: NodeJS.Signals): void {
    const pid = this.child.pid;
    if (pid === undefined) return; // never started
    if (!GROUPS) {
      this.child.kill(sig);
      return;
    }
    try {
      process.kill(-pid, sig);
    } catch {
      // ESRCH: nothing left in the group. EPERM: what is left is not ours to signal.
    }
  }

  /** Is any process left in the group? */
  alive(): boolean {
    const pid = this.child.pid;
    if (pid === undefined || !GROUPS) return false;
    try {
      process.kill(-pid, 0);
      return true;
    } catch (e) {
      return (e as NodeJS.ErrnoException).code === 'EPERM';
    }
  }

  /** Resolves true once the group is empty, or false if it is not by `deadline` (epoch ms). */
  async endsBy(deadline: number): Promise<boolean> {
    while (this.alive()) {
      if (Date.now() >= deadline) return false;
      await new Promise((r) => setTimeout(r, Math.min(GROUP_POLL_MS, Math.max(1, deadline - Date.now()))));
    }
    return true;
  }
}

/** How often `run` looks whether the child's group is empty, after a loss. */
const GROUP_POLL_MS = 50;
