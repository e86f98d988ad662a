/**
 * A small tmpfs to fill, for tests of a full disk (CONTRACT §19 "A failure
 * answer is the truth", docs/operations.md "Disk full"). Mounting needs
 * root, as CI runs; elsewhere `mountTmpfs` says why it cannot, and the test
 * skips with that reason.
 */

import { spawnSync } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface Tmpfs {
  /** The mount point. */
  readonly dir: string;
  /** Write zeros into `<dir>/filler` until the file system refuses even one page more (call again to take what was freed since). */
  fill(): void;
  /** Delete the filler: the space is back. */
  free(): void;
  /** Unmount (lazily if a process still holds a file there) and remove the mount point. */
  unmount(): void;
}

/** Mount a tmpfs of `sizeMiB` under the temporary directory, or say why it cannot be. */
export function mountTmpfs(sizeMiB: number, prefix = 'leasehold-tmpfs-'): Tmpfs | { skip: string } {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  const m = spawnSync('mount', ['-t', 'tmpfs', '-o', `size=${sizeMiB}m,mode=0700`, 'tmpfs', dir], { encoding: 'utf8' });
  if (m.status !== 0) {
    rmSync(dir, { recursive: true, force: true });
    const why = (m.stderr || m.error?.message || `mount exited ${m.status}`).trim().split('\n')[0];
    return { skip: `cannot mount a tmpfs to fill (it needs root): ${why}` };
  }
  const filler = join(dir, 'filler');
  return {
    dir,
    fill() {
      const fd = openSync(filler, 'a');
      try {
        for (const size of [1 << 20, 1 << 16, 1 << 12]) {
          const zeros = Buffer.alloc(size);
          for (;;) {
            try {
              writeSync(fd, zeros);
            } catch (e) {
              if ((e as NodeJS.ErrnoException).code === 'ENOSPC') break;
              throw e;
            }
          }
        }
      } finally {
        closeSync(fd);
      }
    },
    free() {
      rmSync(filler, { force: true });
    },
    unmount() {
      if (spawnSync('umount', [dir]).status !== 0) spawnSync('umount', ['-l', dir]);
      try {
        rmSync(dir, { recursive: true, force: true });
      } catch {
        // Still mounted: left for the machine's temporary-file cleanup.
      }
    },
  };
}
