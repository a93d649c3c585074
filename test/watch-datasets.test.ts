// Datasets in watch mode: a file landing in the watched directory that the project's rules make a
// dataset is captured as shards behind a manifest, straight from the file (its size is known), and an
// in-place edit stores only a few new shards.
import { createHash, randomBytes } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sh, type WatchedProject, watchProject } from './daemon-harness.js';

describe('datasets in watch mode', () => {
  let w: WatchedProject;
  beforeAll(async () => {
    w = await watchProject();
  });
  afterAll(async () => {
    await w?.dispose();
  });

  it('captures a file above the threshold as a dataset, and an edit as a few new shards', async () => {
    await w.api('POST', `/v1/projects/${w.projectId}/fs/datasets/threshold`, { thresholdBytes: 4 * 1024 * 1024 });
    const data = randomBytes(9 * 1024 * 1024);
    await writeFile(join(w.dir, 'scan.raw'), data);
    await w.idle();
    const [first] = await w.history('scan.raw');
    expect(first).toMatchObject({ dataset: true, size: data.length });

    await sh('bash', ['-c', 'printf "EDIT" | dd of=scan.raw bs=1 seek=7000000 conv=notrunc status=none'], { cwd: w.dir });
    await w.idle();
    const history = await w.api<{ items: Array<{ newShards: number | null; shardCount: number | null }> }>(
      'GET',
      `/v1/projects/${w.projectId}/fs/dataset/history?path=scan.raw`,
    );
    expect(history.items).toHaveLength(2);
    expect(history.items[0]!.newShards).toBeGreaterThanOrEqual(1);
    expect(history.items[0]!.newShards).toBeLessThanOrEqual(2);
    const response = await fetch(`${w.daemon.url}/v1/projects/${w.projectId}/fs/read?path=scan.raw`, { headers: { authorization: `Bearer ${w.daemon.owner.apiKey}` } });
    const stored = createHash('sha256').update(Buffer.from(await response.arrayBuffer())).digest('hex');
    expect(stored).toBe(createHash('sha256').update(await readFile(join(w.dir, 'scan.raw'))).digest('hex'));
    // a small file stays an ordinary version
    await writeFile(join(w.dir, 'notes.md'), '# notes\n');
    await w.idle();
    expect((await w.history('notes.md'))[0]).toMatchObject({ dataset: false });
  });
});
