/**
 * CPU time of processes, from /proc (Linux): what the benchmark scripts
 * charge to the server and to the database (docs/benchmarks.md "Method").
 */

import { readdirSync, readFileSync } from 'node:fs';

/** Clock ticks per second of /proc's utime and stime (USER_HZ, 100 on Linux). */
const CLK_TCK = 100;

/** User plus system CPU of `pid` so far, in milliseconds (NaN once it is gone). */
export function cpuMs(pid: number | undefined): number {
  if (pid === undefined) return Number.NaN;
  if (pid === process.pid) {
    const u = process.cpuUsage();
    return (u.user + u.system) / 1000;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(f[11]) + Number(f[12])) * 1000) / CLK_TCK;
  } catch {
    return Number.NaN;
  }
}

/**
 * CPU of every live process whose command name is `name` (e.g. `postgres`:
 * the server and its backends), in milliseconds, with the CPU of their
 * children that have exited (a backend whose connection was closed counts
 * in the postmaster's, once it has reaped it). Without the latter, a
 * backend exiting between two readings took its time with it, and a run
 * whose servers discarded connections printed a negative figure.
 */
export function cpuMsOfCommand(name: string): number {
  let total = 0;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const comm = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      if (comm !== name) continue;
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      // utime, stime, then cutime and cstime: the children waited for.
      total += ((Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14])) * 1000) / CLK_TCK;
    } catch {
      // The process ended while we looked.
    }
  }
  return total;
}
