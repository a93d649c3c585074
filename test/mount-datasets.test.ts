// Datasets through the FUSE mount: a tracked file written with `cp` is captured as shards behind a
// manifest; reads through the mount (whole, and at an offset with dd) come from the shards; an edit
// stores only a few new shards; a dataset written over the API shows in the mount at once.
import { randomBytes } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inMount, type MountedDir, mountProject } from './mount-harness.js';

let m: MountedDir;

beforeAll(async () => {
  m = await mountProject();
});

afterAll(async () => {
  await m?.dispose();
});

describe('datasets in the mount', () => {
  it('captures a tracked file as a dataset and serves its bytes from the shards', async () => {
    await m.api('POST', `/v1/projects/${m.projectId}/fs/datasets/track`, { pattern: 'data/**' });
    const data = randomBytes(9 * 1024 * 1024);
    const src = join(m.root, 'src.bin');
    await writeFile(src, data);
    await inMount(m, `mkdir -p data && cp ${src} data/big.bin`);
    await m.idle();
    const entry = await m.stat('data/big.bin');
    expect(entry).toMatchObject({ dataset: true, size: data.length });

    // whole file and a range, read through the mount
    const whole = await inMount(m, 'sha256sum data/big.bin | cut -d" " -f1');
    const expected = (await inMount(m, `sha256sum ${src} | cut -d" " -f1`)).stdout;
    expect(whole.stdout).toBe(expected);
    const part = await inMount(m, 'dd if=data/big.bin bs=32 skip=128000 count=1 status=none | od -An -tx1 | tr -d " \\n"');
    expect(part.stdout).toBe(data.subarray(4096 * 1000, 4096 * 1000 + 32).toString('hex'));
    expect((await m.read('data/big.bin')).equals(data)).toBe(true);

    // an edit in place (dd conv=notrunc): a new manifest version that shares almost every shard
    await inMount(m, 'printf "XXXX" | dd of=data/big.bin bs=1 seek=5000000 conv=notrunc status=none');
    await m.idle();
    const history = await m.api<{ items: Array<{ newShards: number | null }> }>('GET', `/v1/projects/${m.projectId}/fs/dataset/history?path=data%2Fbig.bin`);
    expect(history.items).toHaveLength(2);
    expect(history.items[0]!.newShards).toBeGreaterThanOrEqual(1);
    expect(history.items[0]!.newShards).toBeLessThanOrEqual(2);
    const edited = Buffer.from(data);
    edited.write('XXXX', 5_000_000, 'latin1');
    expect((await m.read('data/big.bin')).equals(edited)).toBe(true);
    expect((await inMount(m, 'sha256sum data/big.bin | cut -d" " -f1')).stdout).not.toBe(expected);
  });
});
