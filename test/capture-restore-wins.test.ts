// Watch mode without sync (pipeline.ts restoreWins): an edit waiting out its settle delay while the
// user restores the file (`strata restore`) was captured after the restore and became the current
// version, so the disk kept the edit while `strata restore` had said "restored" (2 of 12 tries in a
// user's walkthrough). Now the edit's capture is based on the version the disk had; when a restore
// made after the edit landed meanwhile, the edit is versioned and the restore put back on top (the
// disk then gets it from the engine feed, as for any restore). An edit made after the restore, or a
// change other than a restore, leaves the edit the newest version.

import { mkdir, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { text } from 'node:stream/consumers';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { createIgnoreRules } from '../daemon/capture/ignore.js';
import { createCapturePipeline } from '../daemon/capture/pipeline.js';
import { openDaemonState } from '../daemon/state.js';
import { alice, openTestEngine } from './helpers/world.js';

type World = Awaited<ReturnType<typeof world>>;
let opened: World | undefined;
afterEach(async () => {
  await opened?.close();
  opened = undefined;
});

async function world() {
  const t = await openTestEngine();
  const dir = join(t.home, 'work');
  await mkdir(dir);
  const state = openDaemonState(join(t.home, 'state.sqlite'));
  let diskBase: string | null = null;
  const pipeline = createCapturePipeline({
    engine: t.engine,
    projectId: t.projectId,
    actor: alice,
    logger: pino({ level: 'silent' }),
    ignore: createIgnoreRules(dir),
    state,
    tracked: () => 1,
    restoreWins: { writeBase: () => diskBase },
  });
  const put = (content: string) => t.engine.writeFile({ projectId: t.projectId, path: 'r.md', actor: alice, content: Readable.from([Buffer.from(content)]) });
  return {
    t,
    pipeline,
    put,
    /** the version the disk was last in sync with (its index row) */
    synced(versionId: string) {
      diskBase = versionId;
    },
    async edit(content: string, mtimeMs: number) {
      await writeFile(join(dir, 'r.md'), content);
      await utimes(join(dir, 'r.md'), mtimeMs / 1000, mtimeMs / 1000);
      return pipeline.captureFile({ path: 'r.md', file: join(dir, 'r.md'), executable: false });
    },
    async current() {
      const { stream, version } = await t.engine.readFile({ projectId: t.projectId, path: 'r.md' });
      return { content: await text(stream), versionId: version.versionId };
    },
    async kinds() {
      return (await t.engine.history({ projectId: t.projectId, path: 'r.md', limit: 20 })).items.map((v) => v.kind);
    },
    async close() {
      await pipeline.close();
      state.close();
      await t.close();
    },
  };
}

describe('an edit captured after a restore made meanwhile', () => {
  it('is versioned, and the restore made after it is put back on top', async () => {
    opened = await world();
    const w = opened;
    const orig = await w.put('orig\n');
    const second = await w.put('second\n');
    w.synced(second.version.versionId);
    const restoredAt = w.t.clock.now();
    await w.t.engine.restoreVersion({ projectId: w.t.projectId, versionId: orig.version.versionId, actor: alice });
    const outcome = await w.edit('EDIT\n', restoredAt - 10_000);
    expect(outcome.kind).toBe('versioned');
    expect((await w.current()).content).toBe('orig\n');
    expect(await w.kinds()).toEqual(['restore', 'write', 'restore', 'write', 'write']);
  });

  it('an edit made after the restore stays the newest version', async () => {
    opened = await world();
    const w = opened;
    const orig = await w.put('orig\n');
    const second = await w.put('second\n');
    w.synced(second.version.versionId);
    const restoredAt = w.t.clock.now();
    await w.t.engine.restoreVersion({ projectId: w.t.projectId, versionId: orig.version.versionId, actor: alice });
    await w.edit('EDIT\n', restoredAt + 10_000);
    expect((await w.current()).content).toBe('EDIT\n');
    expect(await w.kinds()).toEqual(['write', 'restore', 'write', 'write']);
  });

  it('a write meanwhile (not a restore) leaves the edit the newest version', async () => {
    opened = await world();
    const w = opened;
    const first = await w.put('first\n');
    w.synced(first.version.versionId);
    const putAt = w.t.clock.now();
    await w.put('put through the API\n');
    await w.edit('EDIT\n', putAt - 10_000);
    expect((await w.current()).content).toBe('EDIT\n');
    expect(await w.kinds()).toEqual(['write', 'write', 'write']);
  });
});
