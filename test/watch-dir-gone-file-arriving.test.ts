// A directory removed on disk while the engine already has a file at its name that this directory
// never had (one from elsewhere, not brought to disk yet) is no deletion of that file (issue 38,
// defect 4's watch half). On the sync model's watching workstations a directory `c` replaced by a
// file `c` elsewhere arrived as the deletion of `c/a` (the daemon removed `c/a` and the emptied
// directory) and then the file `c`; in about 1 run in 3 the event for the removed directory settled
// before the file was placed, found the engine's new `c`, and recorded its deletion: the other
// workstation's file was gone from the server's head and from every workstation.
//
// Forced here without the sync: another process on the same home records the file `c<i>` (the
// daemon hears of it at its next feed poll, within a second) and the empty directory `c<i>` is
// removed at once, so its event settles (100 ms) before the file is brought to disk. Three names:
// a poll that comes first (about one time in ten) brings the file before the event settles, and that
// name tests nothing. Without the fix the test failed in 2 runs of 2 (on c1 already).
import { mkdir, mkdtemp, readFile, rm, rmdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { openLocalEngine } from '../engine/local.js';
import type { VersionRecord } from '../engine/types.js';
import { waitFor } from './daemon-harness.js';
import { createWorkstation, type Workstation } from './model/workstation.js';

let ws: Workstation;

beforeAll(async () => {
  ws = await createWorkstation({ root: await mkdtemp(join(tmpdir(), 'strata-dir-gone-')), mode: 'watch' });
}, 120_000);

afterAll(async () => {
  await ws?.dispose();
}, 60_000);

const kinds = async (path: string) =>
  (await ws.api<{ items: VersionRecord[] }>('GET', ws.projectPath(`/history?path=${encodeURIComponent(path)}&limit=100`))).items.filter((v) => v.path === path).map((v) => v.kind);

it('a removed directory does not delete the file from elsewhere that takes its name', { timeout: 240_000 }, async () => {
  const names = ['c1', 'c2', 'c3'];
  for (const name of names) {
    await mkdir(join(ws.dir, name));
    await writeFile(join(ws.dir, name, 'a'), `${name}/a\n`);
  }
  await ws.start();
  await ws.quiet();
  for (const name of names) expect(await kinds(`${name}/a`)).toEqual(['write']);
  // The files below go first, recorded as deletions; the directories stay, empty.
  for (const name of names) await rm(join(ws.dir, name, 'a'));
  await ws.quiet();
  for (const name of names) expect(await kinds(`${name}/a`)).toEqual(['delete', 'write']);
  const other = await openLocalEngine({ home: ws.home });
  try {
    for (const name of names) {
      await other.engine.writeFile({ projectId: ws.projectId, path: name, actor: { id: 'other', kind: 'local', name: 'another process' }, content: Buffer.from(`file ${name} from elsewhere\n`) });
      // A poll that came first has removed the directory itself to place the file.
      await rmdir(join(ws.dir, name)).catch(() => undefined);
      await waitFor(`${name} on disk, or its deletion recorded`, async () => {
        const onDisk = await readFile(join(ws.dir, name), 'utf8').catch(() => null);
        if (onDisk !== null) return true;
        return (await kinds(name)).includes('delete') ? true : undefined;
      }, 30_000);
    }
  } finally {
    await other.close();
  }
  await ws.quiet();
  for (const name of names) {
    expect(await kinds(name), name).toEqual(['write']);
    expect(await readFile(join(ws.dir, name), 'utf8')).toBe(`file ${name} from elsewhere\n`);
  }
});
