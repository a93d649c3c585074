// Names that are not valid UTF-8 in a watched directory (issue 38 item 4): `printf x > "$(printf
// 'bad\xff\xfename.txt')"` left nothing in status, the log, history or the server. Linux names are
// bytes; Node decoded this one into U+FFFD, a name no lstat finds. Such names are versioned now, their
// stray bytes recorded as U+EF80-U+EFFF (engine/raw-names.ts) and written back to disk as the very
// same bytes; a name the project cannot record (its own text holds one of those reserved characters)
// is never silent: status lists it until it is gone.
import { mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { type WatchedProject, waitFor, watchProject } from './daemon-harness.js';

const BAD_FILE = Buffer.from('bad\xff\xfename.txt', 'latin1');
const BAD_DIR = Buffer.from('d\xe9bit', 'latin1');
const RECORDED_FILE = 'bad\uefff\ueffename.txt';
const RECORDED_IN_DIR = 'd\uefe9bit/in.txt';
// Valid UTF-8 holding a character reserved for stray bytes: recording it would make two names one.
const RESERVED = 'res\uefff.txt';
const at = (dir: string, ...parts: Buffer[]) => Buffer.concat([Buffer.from(`${dir}/`), ...parts]);

let project: WatchedProject | null = null;
afterEach(async () => {
  await project?.dispose();
  project = null;
});

const listed = async (p: WatchedProject) => {
  const status = await p.status();
  return { count: status.unrepresentable?.count ?? 0, paths: status.unrepresentable?.paths ?? [], warnings: status.warnings };
};

describe('names that are not valid UTF-8', () => {
  it.each([
    ['file events', false],
    ['polling', true],
  ])('are versioned byte-exactly (%s): found by the start-up scan and by later changes, restored with the same bytes', async (_how, polling) => {
    project = await watchProject({
      watch: polling ? { forcePolling: true, pollMs: 300 } : {},
      // One before the daemon starts: the start-up scan finds it.
      prepare: async (dir) => writeFile(at(dir, BAD_FILE), 'x'),
    });
    const p = project;
    await waitFor('the scan to version the file', async () => ((await p.history(RECORDED_FILE)).length === 1 ? true : undefined), 15_000);
    expect(await p.read(RECORDED_FILE)).toBe('x');
    // Made while watched: a directory whose name is not UTF-8, with a file in it; an edit.
    await mkdir(at(p.dir, BAD_DIR));
    await writeFile(Buffer.concat([at(p.dir, BAD_DIR), Buffer.from('/in.txt')]), 'y');
    await writeFile(at(p.dir, BAD_FILE), 'x2');
    await waitFor('d\\xe9bit/in.txt to be versioned', async () => ((await p.history(RECORDED_IN_DIR)).length === 1 ? true : undefined), 15_000);
    await waitFor('the edit to be versioned', async () => ((await p.history(RECORDED_FILE)).length === 2 ? true : undefined), 15_000);
    expect(await p.read(RECORDED_IN_DIR)).toBe('y');
    expect((await listed(p)).count).toBe(0);

    // A restore of the first version writes the file back under its own bytes (no second name appears).
    const first = (await p.history(RECORDED_FILE)).at(-1)!;
    await p.api('POST', `/v1/projects/${p.projectId}/history/restore`, { versionId: first.versionId });
    await waitFor('the restore on disk', async () => ((await readFile(at(p.dir, BAD_FILE), 'utf8')) === 'x' ? true : undefined), 15_000);
    // Deleted on disk and restored: back under the same bytes.
    await rm(at(p.dir, BAD_FILE));
    await waitFor('the deletion to be versioned', async () => ((await p.history(RECORDED_FILE))[0]?.kind === 'delete' ? true : undefined), 15_000);
    await p.api('POST', `/v1/projects/${p.projectId}/history/restore`, { versionId: first.versionId });
    await waitFor('the file back on disk', async () => ((await readFile(at(p.dir, BAD_FILE), 'utf8').catch(() => null)) === 'x' ? true : undefined), 15_000);
    const names = (await readdir(p.dir, { encoding: 'buffer' })).map((n) => n.toString('hex')).sort();
    expect(names).toEqual(['.strata', BAD_DIR, BAD_FILE].map((n) => Buffer.from(n).toString('hex')).sort());
    await p.idle();
    expect((await listed(p)).count).toBe(0);
  }, 90_000);

  it.each([
    ['file events', false],
    ['polling', true],
  ])('a name the project cannot record is listed as not versioned (%s) until renamed', async (_how, polling) => {
    project = await watchProject({ watch: polling ? { forcePolling: true, pollMs: 300 } : {} });
    const p = project;
    await p.idle();
    await writeFile(join(p.dir, RESERVED), 'r');
    await mkdir(join(p.dir, 'sub\uefa0'));
    await writeFile(join(p.dir, 'sub\uefa0', 'f.txt'), 'f');
    await writeFile(join(p.dir, 'good.txt'), 'g');
    const now = await waitFor('both to be listed', async () => {
      const l = await listed(p);
      return l.count === 2 ? l : undefined;
    }, 15_000);
    // Shown with the reserved character as \uXXXX: as \xHH it would read as the byte it stands for.
    expect(now.paths).toEqual(['res\\uefff.txt', 'sub\\uefa0']);
    const why = 'not versioned: name holds a character Strata reserves for bytes that are not UTF-8 (U+EF80-U+EFFF)';
    expect(now.warnings).toContain(`${why}: res\\uefff.txt`);
    expect(now.warnings).toContain(`${why}: sub\\uefa0/ (a directory: nothing in it is versioned or synced)`);
    await p.idle();
    expect((await p.history('good.txt')).length).toBe(1);
    await rename(join(p.dir, RESERVED), join(p.dir, 'fixed.txt'));
    await rm(join(p.dir, 'sub\uefa0'), { recursive: true });
    await waitFor('the list to empty', async () => ((await listed(p)).count === 0 ? true : undefined), 15_000);
    await waitFor('fixed.txt to be versioned', async () => ((await p.history('fixed.txt')).length === 1 ? true : undefined), 15_000);
    expect((await p.status()).warnings.filter((w) => w.startsWith('not versioned'))).toEqual([]);
  }, 60_000);
});
