// `rm f` on a mount is a deletion of the version the mount showed, not of whatever the engine has
// when the deletion is recorded (after the settle delay): a newer version made elsewhere meanwhile —
// pulled from another workstation, written through the API — stays, and the mount shows it again.
// Watch mode has always let such an edit beat the deletion (the deletion's base is the index row);
// the mount recorded its removals without a base, so a pull that landed in the settle delay was
// deleted by a removal that never saw it (issue 38's open item 2 of stop 47).
//
// "Elsewhere" is the daemon's API on the same home, as in mount-emptied-dirs.test.ts: a pulled change
// reaches the mount the same way. A long settle delay holds the removal back while the API writes.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inMount, type MountedDir, mountProject, waitFor } from './mount-harness.js';

const SETTLE_MS = 4_000;

let m: MountedDir;

beforeAll(async () => {
  m = await mountProject({ env: { STRATA_MOUNT_SETTLE_MS: String(SETTLE_MS) } });
});

afterAll(async () => {
  await m?.dispose();
});

async function put(path: string, body: string): Promise<void> {
  const response = await fetch(`${m.url}/v1/projects/${m.projectId}/fs/write?path=${encodeURIComponent(path)}`, {
    method: 'PUT',
    headers: { authorization: `Bearer ${m.apiKey}`, 'content-type': 'application/octet-stream' },
    body,
    signal: AbortSignal.timeout(20_000),
  });
  expect(response.status).toBe(201);
}

async function shows(path: string, content: string): Promise<void> {
  await waitFor(`the mount to show ${path} = ${JSON.stringify(content)}`, async () => ((await inMount(m, `cat ${path} 2>/dev/null || true`)).stdout === content ? true : undefined), 30_000);
}

describe('a removal on the mount and a newer version from elsewhere', () => {
  it('keeps the version written elsewhere after the removal, and shows it again', async () => {
    await inMount(m, 'echo v1 > f');
    await m.idle(30_000);
    expect((await m.read('f')).toString()).toBe('v1\n');
    const removedAt = Date.now();
    await inMount(m, 'rm f');
    await put('f', 'v2 from elsewhere\n');
    // The premise: the write landed inside the removal's settle delay.
    expect(Date.now() - removedAt).toBeLessThan(SETTLE_MS);
    await m.idle(30_000);
    await waitFor('the removal to be settled', async () => ((await m.history('f')).length >= 2 ? true : undefined), 30_000);
    const entry = await m.stat('f');
    expect(entry).not.toBeNull();
    expect((await m.read('f')).toString()).toBe('v2 from elsewhere\n');
    // No tombstone: v1 (the mount's), then v2 (the API's), nothing after.
    const kinds = (await m.history('f')).map((v) => (v.contentHash === null ? 'deleted' : 'written'));
    expect(kinds).not.toContain('deleted');
    await shows('f', 'v2 from elsewhere\n');
  });

  it('still deletes the version it showed', async () => {
    await put('g', 'g1\n');
    await shows('g', 'g1\n');
    await inMount(m, 'rm g');
    await m.idle(30_000);
    await waitFor('the deletion of g', async () => ((await m.stat('g')) === null ? true : undefined), 30_000);
    expect((await inMount(m, 'ls -A')).stdout).not.toMatch(/^g$/m);
  });
});
