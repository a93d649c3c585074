// Where benchmarks put their data, and what machine they ran on (recorded with every result).
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, release, totalmem } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository root: this file is bench/lib/env.ts, compiled to dist/bench/lib/env.js. */
export const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
export const RESULTS_DIR = join(REPO_ROOT, 'bench', 'results');
/** The CLI entry point the HTTP variants start as a server child process. */
export const CLI_MAIN = join(REPO_ROOT, 'dist', 'cli', 'main.js');
/**
 * The V8 flags bin/strata gives `strata serve`, `strata daemon` and `strata mount` (see bin/strata for
 * why); child processes the benchmarks start get the same, so they measure what users run.
 * BENCH_NODE_FLAGS (space-separated) overrides them, to compare.
 */
export function nodeFlags(command: 'serve' | 'daemon' | 'mount'): string[] {
  const defaults = { serve: '--max-semi-space-size=1 --heap-growing-percent=100', daemon: '--max-semi-space-size=4 --heap-growing-percent=50', mount: '--max-semi-space-size=4' };
  const flags = process.env['BENCH_NODE_FLAGS'] ?? defaults[command];
  return flags.split(' ').filter((flag) => flag !== '');
}
/** The environment bin/strata gives its node (two malloc arenas; see bin/strata), for the same reason. */
export function nodeEnv(): NodeJS.ProcessEnv {
  return { ...process.env, MALLOC_ARENA_MAX: process.env['MALLOC_ARENA_MAX'] ?? '2' };
}
/**
 * Scratch data and every Strata home live here, so Strata and its peers (cp, git) write to the same
 * disk. Override with BENCH_TMP.
 */
export const BENCH_TMP = process.env['BENCH_TMP'] ?? '/work/bench-tmp';

/** A fresh, empty directory under BENCH_TMP. */
export function freshDir(name: string): string {
  const dir = join(BENCH_TMP, name);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  return dir;
}

export function removeDir(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
}

// One directory per process: benchmarks running at the same time never empty each other's.
const TRASH = join(BENCH_TMP, 'trash', String(process.pid));
let trashed = 0;

/**
 * Moves a directory of many small files aside instead of deleting it now. ext4 does not reuse an inode
 * for ~30 s after it was freed (`recently_deleted()` in ialloc.c) and scans the bitmaps for others, so
 * creating 20,000 files right after deleting 40,000 took 8–10 s instead of 1.5 s here: whichever variant
 * ran after a git trial was penalised. Emptied by emptyTrash() once the measurements are over.
 */
export function trash(dir: string): void {
  mkdirSync(TRASH, { recursive: true });
  renameSync(dir, join(TRASH, String(trashed++)));
}

export function emptyTrash(): void {
  rmSync(TRASH, { recursive: true, force: true });
}

export interface MachineInfo {
  date: string;
  cpu: string;
  cores: number;
  memoryGiB: number;
  kernel: string;
  node: string;
  git: string;
  filesystem: string;
  /** 1-minute load average when the benchmark started: the machine is shared, so this says how noisy it was */
  loadAverage1m: number;
  /**
   * The guest's halt polling (cpuidle haltpoll), when the machine is a VM that has it. At 0 (this
   * machine's kernel command line sets it so) an idle vCPU halts at once and a wakeup sent to it from
   * the other CPU costs ~40 µs instead of ~6 µs (pipe ping-pong), which slows every FUSE round trip
   * that crosses CPUs. docs/benchmarks.md shows how the mount figures move with it.
   */
  guestHaltPollNs: number | null;
}

function readNumber(file: string): number | null {
  try {
    const value = Number(readFileSync(file, 'utf8').trim());
    return Number.isFinite(value) ? value : null;
  } catch {
    return null;
  }
}

export function machineInfo(): MachineInfo {
  let filesystem = 'unknown';
  try {
    mkdirSync(BENCH_TMP, { recursive: true });
    filesystem = execFileSync('df', ['-T', BENCH_TMP], { encoding: 'utf8' }).trim().split('\n').at(-1)?.split(/\s+/).slice(0, 2).join(' ') ?? filesystem;
  } catch {
    // df missing: the field stays 'unknown'; nothing else depends on it
  }
  return {
    date: new Date().toISOString(),
    cpu: cpus()[0]?.model ?? 'unknown',
    cores: cpus().length,
    memoryGiB: Math.round(totalmem() / 1024 ** 3),
    kernel: release(),
    node: process.version,
    git: execFileSync('git', ['--version'], { encoding: 'utf8' }).trim(),
    filesystem,
    loadAverage1m: Math.round(loadavg()[0]! * 100) / 100,
    guestHaltPollNs: readNumber('/sys/module/haltpoll/parameters/guest_halt_poll_ns'),
  };
}

/**
 * Says so when the mount benchmarks run on a VM whose idle vCPUs halt at once: there a FUSE round trip
 * that crosses CPUs costs ~40 µs more, which slows bindfs (a thread hand-off per request) 3–4× and
 * flatters every ratio against it. docs/benchmarks.md ("Wakeups") shows the figures both ways.
 */
export function noteWakeupCost(machine: MachineInfo): void {
  if (machine.guestHaltPollNs !== 0) return;
  console.log(
    'note: guest halt polling is off on this VM (/sys/module/haltpoll/parameters/guest_halt_poll_ns = 0):\n' +
      '      cross-CPU wakeups are slow here and slow bindfs most. To measure as on a machine with fast\n' +
      '      wakeups, as root: echo 200000 > /sys/module/haltpoll/parameters/guest_halt_poll_ns (0 restores it).',
  );
}

/** bench/results/<name>.json: small, commit-worthy. */
export function writeResult(name: string, result: object): string {
  mkdirSync(RESULTS_DIR, { recursive: true });
  const file = join(RESULTS_DIR, `${name}.json`);
  writeFileSync(file, JSON.stringify(result, null, 2) + '\n');
  return file;
}

/** BENCH_ONLY=a,b runs only the variants whose name contains one of these (for profiling one side). */
export function selected(variant: string): boolean {
  const only = process.env['BENCH_ONLY'];
  if (only === undefined || only === '') return true;
  return only.split(',').some((part) => variant.includes(part.trim()));
}
