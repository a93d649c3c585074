// A rename watch mode records is this directory's own doing, both halves: the engine feed (which
// brings what others recorded to disk) leaves out the new name's version and the old name's
// tombstone. It left out only the new name's, so after `mv big big2` of a 2,000-file directory the
// feed looked at 2,000 old names again on the workstation that made the rename (bench/sync-rename.ts,
// issue 38), competing with the capture and push of the rename itself.
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { createIgnoreRules } from '../daemon/capture/ignore.js';
import { createCapturePipeline } from '../daemon/capture/pipeline.js';
import { openDaemonState } from '../daemon/state.js';
import { alice, openTestEngine } from './helpers/world.js';

let close: (() => Promise<void>) | undefined;
afterEach(async () => {
  await close?.();
  close = undefined;
});

describe('a rename captured here', () => {
  it('is left out of the engine feed on both names: the new version and the old name\'s tombstone', { timeout: 20_000 }, async () => {
    const t = await openTestEngine();
    const dir = join(t.home, 'work');
    await mkdir(dir);
    const state = openDaemonState(join(t.home, 'state.sqlite'));
    const pipeline = createCapturePipeline({ engine: t.engine, projectId: t.projectId, actor: alice, logger: pino({ level: 'silent' }), ignore: createIgnoreRules(dir), state, tracked: () => 1 });
    close = async () => {
      await pipeline.close();
      state.close();
      await t.close();
    };
    await t.engine.writeFile({ projectId: t.projectId, path: 'a/f.txt', actor: alice, content: Readable.from([Buffer.from('x\n')]) });
    const outcome = await pipeline.captureRename('a/f.txt', 'b/f.txt');
    expect(outcome.kind).toBe('versioned');
    const records = (await t.engine.history({ projectId: t.projectId, limit: 2 })).items;
    expect(records.map((r) => r.path).sort()).toEqual(['a/f.txt', 'b/f.txt']);
    // What the feed asks for each record it reads: true = ours, left out.
    expect(records.map((r) => pipeline.takeOwnVersion(r.versionId))).toEqual([true, true]);
  });
});
