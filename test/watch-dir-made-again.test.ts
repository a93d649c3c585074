// A watched directory removed and made again before its event settles (`rm -r d; mkdir d`, or a pull
// that brings a file back into it) is a new directory: its inotify watch died with the old one, and
// the new one must be watched. The watcher kept the dead watch under the name, the examine of `d`
// found a directory "already watched", and nothing written in it later made an event: the sync
// model's seed 45001 (path 18): wsA ran `rm -r a` and `echo v68 > a/a/b` at once, a pull brought
// `a/b` back into the new `a`, and wsA's later `echo +53 >> a/b` was never versioned while every
// workstation said in sync (only the 10-minute reconciliation would have found it).
//
// Three names: a machine so loaded that the removal's event settles before the directory is made
// again tests nothing for that name; and ext4 gives the new directory the old one's inode, so a watch
// told from the directory by its inode alone failed here too (on d2). Without the fix the test
// failed on d1 (2 runs of 2).
import { appendFile, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { VersionRecord } from '../engine/types.js';
import { waitFor } from './daemon-harness.js';
import { createWorkstation, type Workstation } from './model/workstation.js';

let ws: Workstation;

beforeAll(async () => {
  ws = await createWorkstation({ root: await mkdtemp(join(tmpdir(), 'strata-dir-made-again-')), mode: 'watch' });
}, 120_000);

afterAll(async () => {
  await ws?.dispose();
}, 60_000);

const kinds = async (path: string) =>
  (await ws.api<{ items: VersionRecord[] }>('GET', ws.projectPath(`/history?path=${encodeURIComponent(path)}&limit=100`))).items.filter((v) => v.path === path).map((v) => v.kind);

const current = async (path: string) => (await ws.bytes(ws.projectPath(`/fs/read?path=${encodeURIComponent(path)}`))).toString('utf8');

it('a directory removed and made again at once is watched again: later writes in it are versioned', { timeout: 240_000 }, async () => {
  const names = ['d1', 'd2', 'd3'];
  for (const name of names) {
    await mkdir(join(ws.dir, name));
    await writeFile(join(ws.dir, name, 'f'), `${name}/f\n`);
  }
  await ws.start();
  await ws.quiet();
  for (const name of names) expect(await kinds(`${name}/f`)).toEqual(['write']);
  // Well within the settle delay (100 ms): the directory's events are examined once it exists again.
  for (const name of names) {
    await rm(join(ws.dir, name), { recursive: true });
    await mkdir(join(ws.dir, name));
    await writeFile(join(ws.dir, name, 'f'), `${name}/f again\n`);
  }
  await ws.quiet();
  for (const name of names) {
    await appendFile(join(ws.dir, name, 'f'), 'appended later\n');
    await writeFile(join(ws.dir, name, 'g'), `${name}/g\n`);
  }
  for (const name of names) {
    // Versioned within the settle delay when the directory is watched; never (until a
    // reconciliation) when it is not.
    await waitFor(`${name}/g versioned`, async () => ((await kinds(`${name}/g`)).includes('write') ? true : undefined), 15_000);
    await waitFor(`${name}/f's append versioned`, async () => ((await current(`${name}/f`)) === `${name}/f again\nappended later\n` ? true : undefined), 15_000);
  }
});
