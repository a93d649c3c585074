// Issue 38 item 8: in watch mode an API write to `sub/race1.txt` answered 201 while `sub` had just
// been replaced on disk by a symbolic link: the file never appeared, history and disk disagreed, and
// nothing said so.

import { mkdir, readlink, rm, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openLocalEngine } from '../engine/local.js';
import { type WatchedProject, waitFor, watchProject } from './daemon-harness.js';

describe('watch mode: an API write below a directory that became a link', () => {
  let w: WatchedProject;
  beforeEach(async () => {
    w = await watchProject();
  });
  afterEach(async () => {
    await w.dispose();
  });
  const put = async (path: string, body: string) => {
    const response = await fetch(`${w.daemon.url}/v1/projects/${w.projectId}/fs/write?path=${encodeURIComponent(path)}`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${w.daemon.owner.apiKey}`, 'content-type': 'application/octet-stream' },
      body,
    });
    return { status: response.status, body: await response.text() };
  };

  const linkedSub = async () => {
    await mkdir(join(w.dir, 'sub'));
    await writeFile(join(w.dir, 'sub', 'a.txt'), 'a\n');
    await waitFor('sub/a.txt versioned', async () => ((await w.read('sub/a.txt').catch(() => null)) === 'a\n' ? true : undefined), 20_000);
  };

  it('the write is refused (409 PATH_THROUGH_SYMLINK) when the link is already there, and nothing is recorded', async () => {
    await linkedSub();
    await rm(join(w.dir, 'sub'), { recursive: true });
    await symlink('/nonexistent/elsewhere', join(w.dir, 'sub'));
    const answer = await put('sub/race1.txt', 'race\n');
    expect(answer.status).toBe(409);
    expect(answer.body).toMatch(/PATH_THROUGH_SYMLINK/);
    expect(await w.history('sub/race1.txt')).toEqual([]);
    await waitFor('the link versioned', async () => ((await w.tree()).get('sub')?.symlink === true ? true : undefined), 20_000);
  });

  it('a write recorded before the daemon saw the link: its deletion is recorded, the link versioned, disk and history agree', async () => {
    await linkedSub();
    // While the daemon is down another process on the same home writes below sub, and sub becomes a
    // link: nothing checked the disk for that write, so the engine has a file below the link.
    await w.stop();
    await rm(join(w.dir, 'sub'), { recursive: true });
    const other = await openLocalEngine({ home: w.home });
    try {
      await other.engine.writeFile({ projectId: w.projectId, path: 'sub/race1.txt', actor: { id: 'other', kind: 'local', name: 'another process' }, content: Buffer.from('race\n') });
    } finally {
      await other.close();
    }
    await symlink('/nonexistent/elsewhere', join(w.dir, 'sub'));
    await w.restart();
    await waitFor('the link versioned', async () => ((await w.tree()).get('sub')?.symlink === true ? true : undefined), 30_000);
    await w.idle();
    expect(await readlink(join(w.dir, 'sub'))).toBe('/nonexistent/elsewhere');
    expect([...(await w.tree()).keys()].filter((path) => path.startsWith('sub'))).toEqual(['sub']);
    expect((await w.history('sub/race1.txt')).map((v) => v.kind)).toEqual(['delete', 'write']);
  });
});
