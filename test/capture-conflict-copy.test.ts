// A synced watch project's edit made on a version that changed meanwhile (another workstation's
// change pulled between the edit and its capture) is kept as a conflict copy (pipeline.ts). The copy
// exists at its own path in the engine only, so it must not count among the pipeline's own versions,
// which the engine feed leaves out as "already on disk": before, such a copy never reached this
// workstation's directory while `strata sync` said everything was in sync.

import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { createIgnoreRules } from '../daemon/capture/ignore.js';
import { createCapturePipeline } from '../daemon/capture/pipeline.js';
import { openDaemonState } from '../daemon/state.js';
import { alice, openTestEngine } from './helpers/world.js';

describe('a conflict copy made by the capture pipeline', () => {
  it('is left for the engine feed to bring to disk; the edit it holds is the copy, the path keeps the pulled version', async () => {
    const t = await openTestEngine();
    const dir = join(t.home, 'work');
    await mkdir(dir);
    const state = openDaemonState(join(t.home, 'state.sqlite'));
    const write = (content: string) => t.engine.writeFile({ projectId: t.projectId, path: 'hot.txt', actor: alice, content: Readable.from([Buffer.from(content)]) });
    const base = await write('both had this\n');
    const pipeline = createCapturePipeline({
      engine: t.engine,
      projectId: t.projectId,
      actor: alice,
      logger: pino({ level: 'silent' }),
      ignore: createIgnoreRules(dir),
      state,
      tracked: () => 1,
      // the disk was last in sync with `base`
      conflictCopies: { workstation: 'wsA', writeBase: () => base.version.versionId },
    });
    try {
      const own = await write('the other side\n'); // pulled meanwhile
      await writeFile(join(dir, 'hot.txt'), 'my edit\n');
      const outcome = await pipeline.captureFile({ path: 'hot.txt', file: join(dir, 'hot.txt'), executable: false });
      expect(outcome.kind).toBe('versioned');
      const copy = outcome.kind === 'versioned' ? outcome : undefined;
      expect(copy?.conflictCopy).toMatch(/^hot \(conflict wsA .*\)\.txt$/);
      expect(copy?.version.path).toBe(copy?.conflictCopy);
      // The feed asks about every record it reads: the copy is not "ours, on disk already".
      expect(pipeline.takeOwnVersion(copy!.version.versionId)).toBe(false);
      expect((await t.engine.stat({ projectId: t.projectId, path: 'hot.txt' }))?.versionId).toBe(own.version.versionId);
    } finally {
      await pipeline.close();
      state.close();
      await t.close();
    }
  });
});
