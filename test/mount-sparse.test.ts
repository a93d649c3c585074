// st_blocks of sparse files (issue 39 item 5): `dd seek=1G count=1` showed 1,048,577K in `du` against
// 4K on the disk underneath. Now a file being written shows its staging file's blocks, and its
// versions keep them (sparse.ts): after the capture, a restart and a restore of that version alike.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inMount, type MountedDir, mountProject } from './mount-harness.js';

let m: MountedDir;

beforeAll(async () => {
  m = await mountProject();
});

afterAll(async () => {
  await m?.dispose();
});

const p = (suffix: string) => `/v1/projects/${m.projectId}${suffix}`;
/** `du -k` of a path in the mount: the KiB its blocks take. */
const du = async (path: string) => Number((await inMount(m, `du -k ${path}`)).stdout.split('\t')[0]);

describe('a sparse file', () => {
  it('takes its blocks, not its size, while written, once versioned, after a restart and a restore', async () => {
    await inMount(m, 'dd if=/dev/zero of=sparse.img bs=4k seek=262144 count=1 status=none');
    expect((await inMount(m, 'stat -c %s sparse.img')).stdout.trim()).toBe(String(1024 * 1024 * 1024 + 4096));
    expect(await du('sparse.img')).toBeLessThan(1024);
    await m.idle(120_000);
    const [version] = await m.history('sparse.img');
    expect(await du('sparse.img')).toBeLessThan(1024);

    // A dense file reports what its size needs.
    await inMount(m, 'head -c 1000000 /dev/urandom > dense.bin');
    await m.idle();
    expect(await du('dense.bin')).toBeGreaterThanOrEqual(976);

    const { root } = m;
    await m.stop();
    m = await mountProject({ root });
    expect(await du('sparse.img')).toBeLessThan(1024);

    await inMount(m, 'rm sparse.img');
    await m.idle();
    await m.api('POST', p('/history/restore'), { versionId: version!.versionId });
    expect(await du('sparse.img')).toBeLessThan(1024);
  }, 180_000);
});
