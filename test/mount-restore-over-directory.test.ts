// A restore (or an API write) of a file where the mount now shows a directory (issue 39 item 10).
//
// `echo data > F; rm F; mkdir F; echo x > F/x.pyc; strata restore <F's version>` answered "restored F"
// and recorded F's version, while the mount went on showing the directory and its unversioned file:
// the restored file was nowhere to be seen, and a file written below F later could not be versioned
// at its own name. Now the restore asks the mount first (ProjectHost.checkWritable), as watch mode
// asks its disk: a directory holding nothing but directories gives way to the file; one holding a
// file the project does not version is in the way, and the restore is refused (409
// PATH_IS_DIRECTORY naming it) with nothing recorded. What waits for its settle delay is versioned
// before a restore or a snapshot (ProjectHost.captureNow): a file written below F a moment before is
// in history and the engine refuses the restore, instead of the file being hidden by it. The same
// settling keeps a new temp-named file (held longer before its capture) from surviving a snapshot
// restore it predates (item 13).

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

/** F's first version, written through the mount and removed again. */
async function removedFile(name: string): Promise<string> {
  await inMount(m, `echo data > ${name}`);
  await m.idle();
  const [version] = await m.history(name);
  await inMount(m, `rm ${name}`);
  await m.idle();
  return version!.versionId;
}

/** The API's refusal, parsed from the harness's error (`METHOD path → status: body`). */
async function refusal(call: Promise<unknown>): Promise<{ status: number; error: { code: string; message: string; details?: Record<string, unknown> } }> {
  const error = await call.then(
    () => null,
    (thrown: Error) => thrown,
  );
  expect(error, 'the call was refused').not.toBeNull();
  const match = /→ (\d+): (.*)$/s.exec(error!.message);
  expect(match, error!.message).not.toBeNull();
  return { status: Number(match![1]), ...JSON.parse(match![2]!) };
}

describe('a file restored where the mount shows a directory', () => {
  it('is refused, naming the unversioned file in the way, and records nothing', async () => {
    const versionId = await removedFile('F1');
    await inMount(m, 'mkdir F1 && echo ignored > F1/cache.pyc');
    const before = (await m.history('F1')).length;

    const refused = await refusal(m.api('POST', p('/history/restore'), { versionId }));
    expect(refused.status).toBe(409);
    expect(refused.error.code).toBe('PATH_IS_DIRECTORY');
    expect(refused.error.details).toMatchObject({ path: 'F1', blocking: 'F1/cache.pyc' });
    expect(await m.history('F1')).toHaveLength(before);
    expect(await m.stat('F1')).toBeNull();
    expect((await inMount(m, 'cat F1/cache.pyc')).stdout).toBe('ignored\n');

    // Out of the way, the restore goes through and the mount shows the file.
    await inMount(m, 'rm -r F1');
    await m.api('POST', p('/history/restore'), { versionId });
    expect((await inMount(m, 'cat F1')).stdout).toBe('data\n');
  });

  it('versions a file written below the directory a moment before, and the engine refuses the restore', async () => {
    const versionId = await removedFile('F2');
    // No wait between the write and the restore: the write is still in its settle delay.
    await inMount(m, 'mkdir F2 && echo fresh > F2/z');
    const refused = await refusal(m.api('POST', p('/history/restore'), { versionId }));
    expect(refused.status).toBe(409);
    expect(refused.error.code).toBe('PATH_IS_DIRECTORY');
    expect((await m.history('F2/z')).map((version) => version.kind)).toEqual(['write']);
    expect((await inMount(m, 'cat F2/z')).stdout).toBe('fresh\n');
  });

  it('replaces a directory that holds nothing but directories', async () => {
    const versionId = await removedFile('F3');
    await inMount(m, 'mkdir -p F3/a/b F3/c');
    await m.api('POST', p('/history/restore'), { versionId });
    expect((await inMount(m, 'cat F3')).stdout).toBe('data\n');
    expect(await m.stat('F3')).toMatchObject({ path: 'F3' });
  });

  it('refuses a snapshot restore the same way, changing nothing', async () => {
    await inMount(m, 'echo snap > F4 && echo other > G4');
    await m.idle();
    const snapshot = await m.api<{ snapshotId: string }>('POST', p('/fs/snapshots'), { message: 'F4 a file' });
    await inMount(m, 'rm F4 && echo changed > G4 && mkdir F4 && echo swap > F4/.notes.swp');
    await m.idle();
    const refused = await refusal(m.api('POST', p(`/fs/snapshots/${snapshot.snapshotId}/restore`)));
    expect(refused.status).toBe(409);
    expect(refused.error.details).toMatchObject({ path: 'F4', blocking: 'F4/.notes.swp' });
    expect((await inMount(m, 'cat G4')).stdout).toBe('changed\n');
    expect(await m.stat('F4')).toBeNull();
  });
});

describe('before a snapshot or a restore, what waits for its capture is versioned', () => {
  it('a snapshot taken right after a write has it', async () => {
    await inMount(m, 'echo now > S1');
    const snapshot = await m.api<{ snapshotId: string }>('POST', p('/fs/snapshots'), { message: 'right after' });
    const entries = await m.api<{ items: Array<{ path: string }> }>('GET', p(`/fs/snapshots/${snapshot.snapshotId}/entries?prefix=S1`));
    expect(entries.items.map((item) => item.path)).toEqual(['S1']);
  });

  it('a new temp-named file made after a snapshot does not survive its restore, and is kept in history', async () => {
    await m.idle();
    const snapshot = await m.api<{ snapshotId: string }>('POST', p('/fs/snapshots'), { message: 'before the temp file' });
    await inMount(m, 'echo partial > download.tmp');
    await m.api('POST', p(`/fs/snapshots/${snapshot.snapshotId}/restore`));
    expect((await inMount(m, 'test -e download.tmp && echo here || echo gone')).stdout).toBe('gone\n');
    // Newest first: the restore's deletion, over the write it versioned first.
    expect((await m.history('download.tmp')).map((version) => version.kind)).toEqual(['snapshot-restore', 'write']);
  });
});
