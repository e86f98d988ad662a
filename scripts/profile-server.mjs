/**
 * The server under a CPU profile, for the benchmarks that start their own
 * server processes (`BENCH_SERVER=scripts/profile-server.mjs npm run
 * bench:fleet -- --sqlite --part=1`; docs/benchmarks.md "Where a batched
 * renewal's CPU goes"). Node refuses `--cpu-prof` in NODE_OPTIONS, and a
 * benchmark's server is stopped by SIGTERM, so this wrapper profiles through
 * the inspector for a window it is given and writes the profile itself:
 *
 *   PROFILE_START_MS  when the window opens, after the server starts (default 0)
 *   PROFILE_MS        how long it lasts (default 20,000)
 *   PROFILE_DIR       where `server-<pid>.cpuprofile` goes (default the OS's temp dir)
 *   PROFILE_SERVER    the server to run (default dist/server.mjs)
 *
 * Open the file in Chrome's DevTools (Performance) or any .cpuprofile viewer.
 */

import inspector from 'node:inspector';
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const root = resolve(import.meta.dirname, '..');
const startMs = Number(process.env.PROFILE_START_MS ?? 0);
const windowMs = Number(process.env.PROFILE_MS ?? 20_000);
const out = join(process.env.PROFILE_DIR ?? tmpdir(), `server-${process.pid}.cpuprofile`);
const session = new inspector.Session();
session.connect();
const post = (method, params) => new Promise((ok, fail) => session.post(method, params, (err, res) => (err ? fail(err) : ok(res))));

setTimeout(async () => {
  await post('Profiler.enable');
  await post('Profiler.setSamplingInterval', { interval: 200 }); // µs
  await post('Profiler.start');
  setTimeout(async () => {
    const { profile } = await post('Profiler.stop');
    writeFileSync(out, JSON.stringify(profile));
    console.error(`profile-server: ${windowMs} ms written to ${out}`);
  }, windowMs).unref();
}, startMs).unref();

await import(pathToFileURL(resolve(root, process.env.PROFILE_SERVER ?? 'dist/server.mjs')).href);
