// The watcher's event for a file the daemon itself just brought to disk costs one lstat, not an
// examine (issue 38: examining each of a clone's 5,000 files again was ~0.8 s of the receiving
// daemon's CPU) — and any write by another tool after the daemon's still is examined. Real files
// written by the daemon's own small-file writer (place-small.ts) from a real local store, real
// renames (they move the ctime), SettleTimers as the watcher runs them; the test plays inotify.

import type { BigIntStats } from 'node:fs';
import { chmod, lstat, mkdir, mkdtemp, open, rename, rm, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ContentStore } from '../engine/ports/content-store.js';
import { createLocalContentStore } from '../engine/storage/local-content-store.js';
import type { Entry } from '../engine/types.js';
import { openBeneath } from '../daemon/beneath.js';
import { OwnWrites } from '../daemon/watch/own-writes.js';
import { placeSmallFile } from '../daemon/watch/place-small.js';
import { SettleTimers } from '../daemon/watch/settle.js';
import { waitFor } from './daemon-harness.js';

describe('watch: the daemon’s own writes are not examined again', () => {
  let root: string;
  let dir: string;
  let store: ContentStore;
  let timers: SettleTimers;
  let own: OwnWrites;
  let examined: string[];

  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), 'strata-own-writes-'));
    dir = join(root, 'project');
    await mkdir(join(dir, 'incoming'), { recursive: true });
    store = await createLocalContentStore({ root: join(root, 'store') });
    own = new OwnWrites();
    examined = [];
    timers = new SettleTimers({
      dir,
      settleMs: 20,
      maxWaitMs: 2_000,
      tempSettleMs: 5_000,
      isNewTemp: () => false,
      examine: async (path) => {
        examined.push(path);
      },
      ownWrite: (path, st) => own.take(path, st),
    });
  });
  afterEach(async () => {
    timers.stop();
    await store.close();
    await rm(root, { recursive: true, force: true });
  });

  /** What materialize does for a small file: placeSmallFile, then the record for the watcher. */
  async function daemonWrites(name: string, content: string): Promise<BigIntStats> {
    const { hash } = await store.putBuffer(Buffer.from(content));
    const entry = { contentHash: hash, size: content.length, executable: false, timestamp: '2026-01-02T03:04:05.000Z' } as Entry;
    const at = await openBeneath(dir, '', { create: false });
    const incoming = await openBeneath(dir, 'incoming', { create: false });
    if (at.kind !== 'dir' || incoming.kind !== 'dir') throw new Error('no directory');
    try {
      const st = await placeSmallFile(store, incoming.dir.ownEntry(`${name}.part`), at.dir, name, entry, null);
      own.note(name, st);
      return st;
    } finally {
      await at.dir.close();
      await incoming.dir.close();
    }
  }

  /** The path's event, as inotify reports it, and its settle delay run out. */
  async function event(path: string): Promise<void> {
    timers.schedule(path);
    await waitFor(`${path} settled`, () => (timers.has(path) ? undefined : true));
  }

  it('takes the event for the daemon’s own write as nothing to examine', async () => {
    await daemonWrites('a.txt', 'from the project\n');
    await event('a.txt');
    expect(examined).toEqual([]);
    // The record is used up: the next event of the path is examined as any other.
    await event('a.txt');
    expect(examined).toEqual(['a.txt']);
  });

  it('examines a write in place that follows the daemon’s at once, of the same size', async () => {
    await daemonWrites('b.txt', 'from the project\n');
    const handle = await open(join(dir, 'b.txt'), 'r+');
    await handle.write('FROM', 0);
    await handle.close();
    await event('b.txt');
    expect(examined).toEqual(['b.txt']);
  });

  it('examines a file saved over the daemon’s (a new inode), a chmod, and a file removed', async () => {
    await daemonWrites('c.txt', 'from the project\n');
    await writeFile(join(dir, 'c.tmp'), 'from an editor!!\n');
    await rename(join(dir, 'c.tmp'), join(dir, 'c.txt'));
    await event('c.txt');

    await daemonWrites('d.txt', 'from the project\n');
    await chmod(join(dir, 'd.txt'), 0o755);
    await event('d.txt');

    await daemonWrites('e.txt', 'from the project\n');
    await rm(join(dir, 'e.txt'));
    await event('e.txt');
    expect(examined).toEqual(['c.txt', 'd.txt', 'e.txt']);
  });

  it('a write in place after the daemon’s, its mtime put back, once the ctime clock moved on', async () => {
    // Past the record's ctime window (its rename's tick): only the ctime tells this write apart.
    const st = await daemonWrites('f.txt', 'from the project\n');
    const noted = Date.now();
    await waitFor('the clock past the rename', () => (Date.now() > noted + 20 ? true : undefined));
    const handle = await open(join(dir, 'f.txt'), 'r+');
    await handle.write('FROM', 0);
    await handle.close();
    // The daemon's mtime is a whole millisecond (writtenMtime): a Date puts it back exactly.
    const mtime = new Date(Number(st.mtimeNs / 1_000_000n));
    await utimes(join(dir, 'f.txt'), mtime, mtime);
    const now = await lstat(join(dir, 'f.txt'), { bigint: true });
    expect([now.ino, now.size, now.mtimeNs, now.mode]).toEqual([st.ino, st.size, st.mtimeNs, st.mode]);
    await event('f.txt');
    expect(examined).toEqual(['f.txt']);
  });
});
