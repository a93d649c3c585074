// The order in which waiting captures get a free slot (daemon/capture/capture-queue.ts): the most
// recently changed file and the longest-waiting request, in turn; and the capture pipeline using it.

import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { CaptureQueue } from '../daemon/capture/capture-queue.js';
import { createIgnoreRules } from '../daemon/capture/ignore.js';
import { createCapturePipeline } from '../daemon/capture/pipeline.js';
import { openDaemonState } from '../daemon/state.js';
import { alice, openTestEngine } from './helpers/world.js';

/** Queues `changedAt` values in order; returns the order in which `release()` lets them run. */
async function order(changedAts: number[], releases = changedAts.length): Promise<number[]> {
  const queue = new CaptureQueue();
  const ran: number[] = [];
  const done = changedAts.map((changedAt, i) => queue.wait(changedAt).then(() => ran.push(i)));
  for (let i = 0; i < releases; i++) {
    queue.release();
    await Promise.resolve();
  }
  if (releases >= changedAts.length) await Promise.all(done);
  return ran;
}

describe('capture queue', () => {
  it('serves the most recently changed file and the longest waiting request in turn', async () => {
    // requests 0..4 arrive in that order; 3 is the file changed last (written after a burst whose
    // events keep arriving), 4 came last but its file changed before
    expect(await order([10, 20, 30, 50, 40])).toEqual([3, 0, 4, 1, 2]);
  });

  it('without ctimes (deletions, the mount) it alternates newest and oldest request', async () => {
    expect(await order([0, 0, 0, 0, 0])).toEqual([4, 0, 3, 1, 2]);
  });

  it('a stream of fresh writes cannot starve the first request', async () => {
    const queue = new CaptureQueue();
    let firstRan = false;
    void queue.wait(1).then(() => {
      firstRan = true;
    });
    for (let t = 2; t < 10_000 && !firstRan; t++) {
      void queue.wait(t);
      void queue.wait(t + 0.5);
      queue.release();
      queue.release();
      await Promise.resolve();
    }
    expect(firstRan).toBe(true);
  });

  it('keeps every request exactly once through many takes from both ends', async () => {
    const n = 5_000;
    const changedAts = Array.from({ length: n }, (_, i) => (i * 7919) % n);
    const ran = await order(changedAts);
    expect(ran).toHaveLength(n);
    expect(new Set(ran).size).toBe(n);
    // every other take is the freshest of what was left: the first ones are the highest ctimes
    expect(changedAts[ran[0]!]).toBe(n - 1);
    expect(changedAts[ran[2]!]).toBe(n - 2);
    // and the others the oldest requests, in arrival order
    expect([ran[1], ran[3], ran[5]]).toEqual([0, 1, 2]);
  });
});

describe('capture pipeline under a backlog', () => {
  it('reads a file changed just now within a few captures, however many older ones wait', async () => {
    // The real pipeline, engine and store; only its width is narrowed (2 captures at a time instead
    // of 128) so that a backlog forms on any machine: 400 files of a burst (ctime of the burst), then
    // one written after it. Served first come, first served, it would be the 401st read.
    const t = await openTestEngine();
    const dir = join(t.home, 'work');
    await mkdir(dir);
    const state = openDaemonState(join(t.home, 'state.sqlite'));
    const pipeline = createCapturePipeline({
      engine: t.engine,
      projectId: t.projectId,
      actor: alice,
      logger: pino({ level: 'silent' }),
      ignore: createIgnoreRules(dir),
      state,
      tracked: () => 0,
      maxInFlight: 2,
    });
    try {
      const finished: string[] = [];
      const capture = (path: string, changedAt: number) =>
        pipeline.captureFile({ path, file: join(dir, path), executable: false, changedAt }).then((outcome) => {
          finished.push(path);
          return outcome;
        });
      for (let i = 0; i < 400; i++) await writeFile(join(dir, `b${i}.dat`), `burst ${i}\n`);
      await writeFile(join(dir, 'result.txt'), 'short-lived\n');
      // the burst's requests, then result.txt's, all before any capture finishes
      const burst = Array.from({ length: 400 }, (_, i) => capture(`b${i}.dat`, 1_000));
      const result = await capture('result.txt', 2_000);
      expect(result.kind).toBe('versioned');
      expect(finished.indexOf('result.txt')).toBeLessThan(10);
      await Promise.all(burst);
      expect(finished).toHaveLength(401);
    } finally {
      await pipeline.close();
      state.close();
      await t.dispose();
    }
  });
});
