// A file still being written is not versioned mid-write (the tester's `cp` of a 500 MB file, stalled by
// writeback throttling for longer than the 100 ms settle delay, left a truncated version in 4 of 5
// copies). Real child processes hold the file open and pause between chunks like a throttled `cp`;
// a real inotify watch; the version's content hash is compared with the file on disk.

import { type ChildProcess, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { SettleTimers } from '../daemon/watch/settle.js';
import { createWriterProbe, type WriterProbe } from '../daemon/watch/writers.js';
import { hashBuffer } from '../engine/hash.js';
import { sh, waitFor, type WatchedProject, watchProject } from './daemon-harness.js';

const MiB = 1024 * 1024;

/**
 * A node process that writes `chunks` (MiB each) to `file`, pausing `pauseMs` between them, the file
 * open throughout (as `cp` keeps it), then closes it. The pauses are 3–5× the settle delay.
 */
function slowWriter(file: string, chunks: number[], pauseMs: number): string[] {
  const script = `
    const fs = require('node:fs');
    const { randomBytes } = require('node:crypto');
    const [file, pause, ...chunks] = process.argv.slice(1);
    // The bytes are made before the open: cp writes right after it opens, and making 20 MiB of random
    // bytes between the open and the first write took longer than the settle delay on a loaded
    // machine (an empty file is looked at without asking /proc, and read later half written).
    const bufs = chunks.map((mib) => randomBytes(Number(mib) * ${MiB}));
    const fd = fs.openSync(file, 'w');
    const sleep = (ms) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
    bufs.forEach((buf, i) => {
      if (i > 0) sleep(Number(pause));
      for (let off = 0; off < buf.length; ) off += fs.writeSync(fd, buf, off);
    });
    fs.closeSync(fd);
  `;
  return ['-e', script, file, String(pauseMs), ...chunks.map(String)];
}

const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');

describe('watch mode: a file still being written', () => {
  let w: WatchedProject | undefined;
  afterEach(async () => {
    await w?.dispose();
    w = undefined;
  });

  it('a 48 MiB file written in chunks with 400 ms stalls, held open: exactly one version, the whole file', async () => {
    w = await watchProject();
    await w.idle();
    // 20 MiB at once (the page cache takes it), then throttled: 4 × 7 MiB, 400 ms apart.
    await sh(process.execPath, slowWriter(join(w.dir, 'big4.bin'), [20, 7, 7, 7, 7], 400), { timeoutMs: 60_000 });
    const onDisk = await readFile(join(w.dir, 'big4.bin'));
    expect(onDisk.length).toBe(48 * MiB);
    await waitFor('big4.bin to be versioned', async () => ((await w!.history('big4.bin')).length > 0 ? true : undefined), 30_000);
    await w.idle(30_000);
    const history = await w.history('big4.bin');
    expect(history.map((v) => v.size)).toEqual([48 * MiB]);
    // The content hash of the whole file (48 MiB is below the 64 MiB dataset threshold: one object).
    // Not read back over /fs/read: after a 48 MiB read the daemon's stop hung (reported separately).
    expect(history[0]!.contentHash).toBe(hashBuffer(onDisk));
  }, 120_000);

  it('a small file saved is still versioned at the settle delay', async () => {
    w = await watchProject();
    await w.idle();
    await writeFile(join(w.dir, 'notes.txt'), 'hello\n');
    await waitFor('notes.txt to be versioned', async () => ((await w!.history('notes.txt')).length === 1 ? true : undefined));
    expect(await w.read('notes.txt')).toBe('hello\n');
  });
});

/** SettleTimers on its own: what examine would read at each look, and when. */
describe('settle: held while a writer has the file open', () => {
  let dir: string;
  let timers: SettleTimers | undefined;
  let child: ChildProcess | undefined;
  afterEach(async () => {
    timers?.stop();
    timers = undefined;
    if (child?.exitCode === null) child.kill('SIGKILL');
    child = undefined;
    await rm(dir, { recursive: true, force: true });
  });

  /** Starts the writer; every event for `big.bin` is reported as the watcher would (one per chunk suffices). */
  async function run(options: { writers?: WriterProbe; largeMaxWaitMs?: number; chunks: number[]; pauseMs: number }) {
    dir = await mkdtemp(join(tmpdir(), 'strata-settle-'));
    const looks: { size: number; sha: string }[] = [];
    timers = new SettleTimers({
      dir,
      settleMs: 100,
      maxWaitMs: 2_000,
      tempSettleMs: 5_000,
      isNewTemp: () => false,
      examine: async (path) => {
        const bytes = await readFile(join(dir, path));
        looks.push({ size: bytes.length, sha: sha256(bytes) });
      },
      ...(options.writers ? { writers: options.writers } : {}),
      ...(options.largeMaxWaitMs === undefined ? {} : { largeMaxWaitMs: options.largeMaxWaitMs }),
    });
    const file = join(dir, 'big.bin');
    // The test plays the watcher: an event every 20 ms while the file grows (a real one sends many more).
    const writer = spawn(process.execPath, slowWriter(file, options.chunks, options.pauseMs), { stdio: 'ignore' });
    child = writer;
    let lastSize = -1;
    const exited = new Promise<void>((resolve) => writer.on('exit', () => resolve()));
    let done = false;
    void exited.then(() => {
      done = true;
    });
    while (!done) {
      const size = await stat(file).then(
        (st) => st.size,
        () => -1,
      );
      if (size !== lastSize) {
        timers.schedule('big.bin');
        lastSize = size;
      }
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    // The close and the last bytes, as inotify would report them.
    timers.schedule('big.bin');
    const final = sha256(await readFile(file));
    return { looks, final, timers };
  }

  it('the /proc probe sees a writer holding a file open, and not after the close or a read-only open', async () => {
    dir = await mkdtemp(join(tmpdir(), 'strata-writers-'));
    const file = join(dir, 'held.bin');
    await writeFile(file, 'x');
    const probe = createWriterProbe();
    const hold = (flags: string) =>
      spawn(process.execPath, ['-e', `require('node:fs').openSync(process.argv[1], '${flags}'); console.log('open'); setInterval(() => {}, 1000)`, file], {
        stdio: ['ignore', 'pipe', 'ignore'],
      });
    for (const [flags, expected] of [
      ['r+', true],
      ['a', true],
      ['r', false],
    ] as const) {
      const holder = hold(flags);
      child = holder;
      await new Promise<void>((resolve) => holder.stdout!.once('data', () => resolve()));
      expect(await probe.openForWriting(file), flags).toBe(expected);
      holder.kill('SIGKILL');
      await new Promise<void>((resolve) => holder.once('exit', () => resolve()));
      // A killed process's files are closed once it is reaped.
      await waitFor('the holder to be gone', async () => ((await probe.openForWriting(file)) === false ? true : undefined));
    }
    expect(await probe.openForWriting(join(dir, 'missing.bin'))).toBe(false);
  });

  it('held open across 400 ms stalls: one look, after the close, at the whole file', async () => {
    const { looks, final } = await run({ chunks: [20, 7, 7, 7], pauseMs: 400 });
    await waitFor('the look', () => (looks.length > 0 && timers!.size === 0 ? true : undefined), 20_000);
    expect(looks).toEqual([{ size: 41 * MiB, sha: final }]);
  }, 60_000);

  it('a probe that cannot tell (a file of another user): quiet for a second with the same size and mtime, one look', async () => {
    const { looks, final } = await run({ writers: { openForWriting: async () => null }, chunks: [20, 7, 7, 7], pauseMs: 400 });
    await waitFor('the look', () => (looks.length > 0 && timers!.size === 0 ? true : undefined), 20_000);
    expect(looks).toEqual([{ size: 41 * MiB, sha: final }]);
  }, 60_000);

  it('a large file written to for longer than the cap still gets looked at before its writer ends, and at the end', async () => {
    // 18 MiB, then 1 MiB every 300 ms for ~3 s; cap 1 s: a look while it is written, and the final one.
    const { looks, final } = await run({ largeMaxWaitMs: 1_000, chunks: [18, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1], pauseMs: 300 });
    await waitFor('the final look', () => (looks.at(-1)?.sha === final && timers!.size === 0 ? true : undefined), 20_000);
    expect(looks.length).toBeGreaterThan(1);
    expect(looks[0]!.size).toBeLessThan(28 * MiB);
  }, 60_000);
});
