// A change made while the daemon's catch-up scan is still going (issue 13 item 8: after an rsync of
// 5,000 files, a content that lived about a second was never versioned). The scan's walk waits while
// its window of files being hashed is full; directories it had not reached were not watched, so a
// change there was seen only as its final state. Every directory must be watched before the slow
// part of the scan starts, so such a change is an event like any other.

import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { baseEnv, MAIN, startListening } from './cli-harness.js';
import { sh, sleep, waitFor } from './daemon-harness.js';

const DIRS = 100;
const FILES_PER_DIR = 20;
/** One file per directory this large keeps the scan's hashing busy for seconds, as real data does. */
const LARGE = 1024 * 1024;

describe('watch mode: a change during the catch-up scan', () => {
  let root: string;
  let dir: string;
  let env: NodeJS.ProcessEnv;
  let daemon: Awaited<ReturnType<typeof startListening>> | undefined;
  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'strata-catchup-race-'));
    env = { ...baseEnv(join(root, 'config')), STRATA_HOME: join(root, 'home') };
    dir = join(root, 'data');
    await mkdir(dir);
  });
  afterAll(async () => {
    if (daemon && daemon.child.exitCode === null) daemon.child.kill('SIGKILL');
    await rm(root, { recursive: true, force: true });
  });
  const strata = (args: string[], allowFail = false) => sh(process.execPath, [MAIN, ...args], { cwd: dir, env, allowFail, timeoutMs: 30_000 });

  it('versions a content that lived a second while the scan was running, in every directory', async () => {
    await strata(['init', dir]);
    // what an rsync left: 2,100 files in 100 directories, a large one in each, none versioned yet
    const filler = Buffer.alloc(8 * 1024, 7);
    for (let d = 0; d < DIRS; d++) {
      await mkdir(join(dir, `run${d}`));
      await writeFile(join(dir, `run${d}`, 'a-large.bin'), Buffer.alloc(LARGE, d));
      for (let f = 0; f < FILES_PER_DIR; f++) await writeFile(join(dir, `run${d}`, `f${f}.dat`), filler);
    }
    daemon = await startListening(['daemon', '--listen', '127.0.0.1:0'], env);
    const scanning = JSON.parse((await strata(['status', '--json'])).stdout) as { projects: Array<{ scan: { finished: boolean } | null }> };
    // the scan must still be under way for this to mean anything
    expect(scanning.projects[0]!.scan?.finished).toBe(false);
    for (let d = 0; d < DIRS; d++) await writeFile(join(dir, `run${d}`, 'result.txt'), `short-lived ${d}\n`);
    // the content lives about a second (the scenario), then is replaced
    await sleep(1_000);
    for (let d = 0; d < DIRS; d++) await writeFile(join(dir, `run${d}`, 'result.txt'), `final ${d}\n`);

    await waitFor('the scan to finish and everything to settle', async () => {
      const status = JSON.parse((await strata(['status', '--json'])).stdout) as { projects: Array<{ scan: { finished: boolean } | null; pending: number }> };
      const project = status.projects[0]!;
      return project.scan?.finished === true && project.pending === 0 ? true : undefined;
    }, 120_000);
    const missed: number[] = [];
    for (let d = 0; d < DIRS; d++) {
      const history = await waitFor(`run${d}/result.txt final`, async () => {
        const r = await strata(['history', `run${d}/result.txt`, '--json'], true);
        if (r.code !== 0) return undefined;
        const items = JSON.parse(r.stdout).items as Array<{ versionId: string; size: number }>;
        return items[0]?.size === `final ${d}\n`.length ? items : undefined;
      }, 30_000);
      if (!history.some((v) => v.size === `short-lived ${d}\n`.length)) missed.push(d);
    }
    expect(missed).toEqual([]);
  }, 240_000);
});
