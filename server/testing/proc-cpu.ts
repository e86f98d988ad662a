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
 * the server and its backends), in milliseconds. A backend that exits
 * between two readings takes its time with it, so compare readings taken
 * while the same connections stay open.
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
      total += ((Number(f[11]) + Number(f[12])) * 1000) / CLK_TCK;
    } catch {
      // The process ended while we looked.
    }
  }
  return total;
}
