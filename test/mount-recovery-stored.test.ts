// A mount killed after the store took a finished file in but before its version committed leaves only
// the journal record (`<pid>-<uuid>.stg.json`, with the hash). The next start versions the stored
// object, whatever form the store keeps it in: a loose file, a row of the SQLite pack (a small file),
// or a span of a dataset pack file.
import { mkdir, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { hashBuffer } from '../engine/hash.js';
import { recoverStaging } from '../daemon/mount/recovery.js';
import { createEngineSink } from '../daemon/mount/sink.js';
import { alice, openTestEngine, readAll, type TestEngine } from './helpers/world.js';

describe('mount recovery: a stored file whose version did not commit', () => {
  let t: TestEngine;
  beforeEach(async () => {
    t = await openTestEngine();
  });
  afterEach(async () => {
    await t.dispose();
  });

  it('versions it from the store, small (packed) and large (loose) alike', async () => {
    const stagingDir = join(t.home, 'staging-test');
    await mkdir(stagingDir, { recursive: true });
    const small = Buffer.from('x = 1\n'.repeat(100));
    const large = Buffer.alloc(300_000, 7);
    for (const [name, data] of [
      ['small.py', small],
      ['large.bin', large],
    ] as const) {
      const stored = await t.store.putBuffer(data);
      expect(stored.hash).toBe(hashBuffer(data));
      // pid 2147483646: a writer that is gone
      const record = { projectId: t.projectId, path: `src/${name}`, executable: false, hash: stored.hash };
      await writeFile(join(stagingDir, `2147483646-${name.length}0000000-0000-0000-0000-000000000000.stg.json`), JSON.stringify(record));
    }
    const sink = createEngineSink(t.engine, t.projectId, alice);
    const recovered = await recoverStaging({ stagingDir, projectId: t.projectId, sink, store: t.store }, pino({ level: 'silent' }));
    expect(recovered).toEqual({ versioned: 2, unclosed: [] });
    for (const [path, data] of [
      ['src/small.py', small],
      ['src/large.bin', large],
    ] as const) {
      const { stream } = await t.engine.readFile({ projectId: t.projectId, path });
      expect((await readAll(stream)).equals(data)).toBe(true);
    }
    expect(await readdir(stagingDir)).toEqual([]);
  });
});
