// A fresh ext4 filesystem (with a journal, as mkfs.ext4 makes it) on a loop device, for benchmarks
// whose result depends on the filesystem's history.
//
// Why: this machine's root filesystem is ext4 without a journal. There, ext4 checks every free inode
// it might hand out against the buffer cache (`recently_deleted()` in fs/ext4/ialloc.c, skipped when
// a journal exists) and refuses ones freed in the last 30 s. After a run that deleted 20,000 files,
// `tar x` of 20,000 files into a plain directory took 15.6 s of system time instead of 0.4 s (perf:
// 61% in find_get_block_common/recently_deleted). Whichever variant ran after another's deletions
// (Strata unlinks a staging file per captured small file; the peers' trees are removed between runs)
// was penalised. A new journaled filesystem per measurement is what a user's disk looks like and
// gives every variant the same start.
//
// Needs root, losetup and mkfs.ext4; otherwise (or with BENCH_SCRATCH_FS=off) the measurement runs in
// a plain directory under BENCH_TMP and the result says so.
import { existsSync, mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { BENCH_TMP } from './env.js';
import { run } from './proc.js';

export interface ScratchFs {
  /** an empty directory on the scratch filesystem */
  dir: string;
  /** 'ext4 (journal, loop)' or 'host directory' */
  kind: string;
  release(): Promise<void>;
}

let warned = false;

function canLoopMount(): boolean {
  if (process.env['BENCH_SCRATCH_FS'] === 'off') return false;
  if (process.getuid?.() !== 0) return false;
  return existsSync('/dev/loop-control') && ['/usr/sbin/mkfs.ext4', '/sbin/mkfs.ext4'].some((p) => existsSync(p));
}

/** A fresh filesystem of `sizeMiB`, mounted under BENCH_TMP/name. Release it in `finally`. */
export async function scratchFs(name: string, sizeMiB: number): Promise<ScratchFs> {
  const base = join(BENCH_TMP, name);
  rmSync(base, { recursive: true, force: true });
  mkdirSync(base, { recursive: true });
  if (!canLoopMount()) {
    if (!warned) console.log('  (scratch filesystem: plain directory under BENCH_TMP; set BENCH_SCRATCH_FS=off only to compare)');
    warned = true;
    const dir = join(base, 'fs');
    mkdirSync(dir);
    return { dir, kind: 'host directory', release: async () => rmSync(base, { recursive: true, force: true }) };
  }
  const image = join(base, 'fs.img');
  const dir = join(base, 'fs');
  mkdirSync(dir);
  // Inode tables and journal initialised now: lazy init would zero them in the background during
  // the measurement.
  await run('truncate', ['-s', `${sizeMiB}M`, image]);
  await run('mkfs.ext4', ['-q', '-F', '-E', 'lazy_itable_init=0,lazy_journal_init=0,nodiscard', image]);
  await run('mount', ['-o', 'loop', image, dir]);
  return {
    dir,
    kind: 'ext4 (journal, loop device)',
    async release() {
      await run('umount', [dir]).catch(() => run('umount', ['-l', dir]));
      rmSync(base, { recursive: true, force: true });
    },
  };
}
