// Names that are not valid UTF-8 in a watched directory (issue 38 item 4): `printf x > "$(printf
// 'bad\xff\xfename.txt')"` left nothing in status, the log, history or the server. Linux names are
// bytes; Node decoded this one into U+FFFD, a name no lstat finds. Whatever else happens to such a
// name, it is never silent: status lists it (non-UTF-8 bytes as \xHH) until it is gone.
import { mkdir, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { type WatchedProject, waitFor, watchProject } from './daemon-harness.js';

const BAD_FILE = Buffer.from('bad\xff\xfename.txt', 'latin1');
const BAD_DIR = Buffer.from('d\xe9bit', 'latin1');
const at = (dir: string, ...parts: Buffer[]) => Buffer.concat([Buffer.from(`${dir}/`), ...parts]);

let project: WatchedProject | null = null;
afterEach(async () => {
  await project?.dispose();
  project = null;
});

const unrepresentable = async (p: WatchedProject) => {
  const status = await p.status();
  return { count: status.unrepresentable?.count ?? 0, paths: status.unrepresentable?.paths ?? [], warnings: status.warnings };
};

describe('names that are not valid UTF-8', () => {
  it.each([
    ['file events', false],
    ['polling', true],
  ])('are listed as not versioned (%s), from the start-up scan and from later changes, until renamed', async (_how, polling) => {
    project = await watchProject({
      watch: polling ? { forcePolling: true, pollMs: 300 } : {},
      // One before the daemon starts: the start-up scan finds it.
      prepare: async (dir) => writeFile(at(dir, BAD_FILE), 'x'),
    });
    const p = project;
    await p.idle();
    await waitFor('the scan to list the file', async () => ((await unrepresentable(p)).count === 1 ? true : undefined), 15_000);
    // One made while watched, a directory whose name is not UTF-8 (nothing in it can be recorded).
    await mkdir(at(p.dir, BAD_DIR));
    await writeFile(Buffer.concat([at(p.dir, BAD_DIR), Buffer.from('/in.txt')]), 'y');
    await writeFile(join(p.dir, 'good.txt'), 'g');
    const listed = await waitFor('the directory to be listed', async () => {
      const now = await unrepresentable(p);
      return now.count === 2 ? now : undefined;
    }, 15_000);
    expect(listed.paths).toEqual(['bad\\xff\\xfename.txt', 'd\\xe9bit']);
    expect(listed.warnings).toContain('not versioned: name is not valid UTF-8: bad\\xff\\xfename.txt');
    expect(listed.warnings).toContain('not versioned: name is not valid UTF-8: d\\xe9bit/ (a directory: nothing in it is versioned or synced)');
    await p.idle();
    expect((await p.history('good.txt')).length).toBe(1);
    // Renamed to a UTF-8 name: versioned, and no longer listed.
    await rename(at(p.dir, BAD_FILE), join(p.dir, 'fixed.txt'));
    await rm(at(p.dir, BAD_DIR), { recursive: true });
    await waitFor('the list to empty', async () => ((await unrepresentable(p)).count === 0 ? true : undefined), 15_000);
    await waitFor('fixed.txt to be versioned', async () => ((await p.history('fixed.txt')).length === 1 ? true : undefined), 15_000);
    expect(await p.read('fixed.txt')).toBe('x');
    expect((await p.status()).warnings.filter((w) => w.startsWith('not versioned'))).toEqual([]);
  }, 60_000);
});
