// `echo line >> log` in a loop (issue 39 item 8): every `>>` is a close, so every one is a version —
// but each was captured before the next open was answered, 2.8 ms per append (46× bindfs). Now the
// closed bytes of a small file opened again are set aside and recorded in order with the settle
// delay's batch (Reconciler.freeze). These check that nothing of that changed what history holds:
// one version per append, in order, each the file as that close left it, and after a kill -9 in the
// middle, every append once (the journal marks which closes were recorded, so the restart neither
// loses the others nor records one twice).

import { describe, expect, it } from 'vitest';
import type { VersionRecord } from '../engine/types.js';
import { inMount, type MountedDir, mountProject, waitExit, waitFor } from './mount-harness.js';

const APPENDS = 300;

/** What the log holds after `count` appends. */
const logOf = (count: number) => Array.from({ length: count }, (_, i) => `line ${i + 1}\n`).join('');

async function readVersion(m: MountedDir, versionId: string): Promise<string> {
  const response = await fetch(`${m.url}/v1/projects/${m.projectId}/fs/read?versionId=${versionId}`, { headers: { authorization: `Bearer ${m.apiKey}` }, signal: AbortSignal.timeout(20_000) });
  expect(response.status).toBe(200);
  return response.text();
}

/** One version per append, oldest first, each the log after that many appends (sampled reads). */
async function expectEveryAppend(m: MountedDir, path: string, count: number): Promise<void> {
  const versions = (await m.history(path)).reverse() as VersionRecord[];
  expect(versions.map((version) => version.size)).toEqual(Array.from({ length: count }, (_, i) => logOf(i + 1).length));
  for (const i of [0, 1, Math.floor(count / 2), count - 1]) expect(await readVersion(m, versions[i]!.versionId)).toBe(logOf(i + 1));
}

const appendLoop = (path: string) => `for i in $(seq 1 ${APPENDS}); do echo "line $i" >> ${path}; done`;

describe('appends in a loop', () => {
  it('are one version each, in order, each what its close left', async () => {
    const m = await mountProject();
    try {
      await inMount(m, appendLoop('app.log'));
      await m.idle();
      await expectEveryAppend(m, 'app.log', APPENDS);
      expect((await inMount(m, 'cat app.log')).stdout).toBe(logOf(APPENDS));
      // Appends to a file that is already versioned, then a rename right after: history follows it.
      await inMount(m, `${appendLoop('app.log').replace(`seq 1 ${APPENDS}`, `seq ${APPENDS + 1} ${APPENDS + 20}`)}; mv app.log moved.log`);
      await m.idle();
      expect(await m.stat('app.log')).toBeNull();
      expect((await m.read('moved.log')).toString()).toBe(logOf(APPENDS + 20));
      // Each append closed at the old name is a version there; the rename carries the last of those
      // to the new name (a deletion there, a write of the same bytes here), and an append not yet
      // recorded when the rename came is a version here.
      const sizes = (path: string) => m.history(path).then((versions) => versions.filter((version) => version.kind === 'write').map((version) => version.size).reverse());
      const both = [...(await sizes('app.log')), ...(await sizes('moved.log'))];
      expect(both.filter((size, i) => size !== both[i - 1])).toEqual(Array.from({ length: APPENDS + 20 }, (_, i) => logOf(i + 1).length));
      expect(both.length).toBeLessThanOrEqual(APPENDS + 21);
    } finally {
      await m.dispose();
    }
  }, 120_000);

  for (const settle of ['60000', '100']) {
    it(`survive a kill -9 of the mount right after them, each once (settle delay ${settle} ms)`, async () => {
      const first = await mountProject({ env: { STRATA_MOUNT_SETTLE_MS: settle } });
      const { root } = first;
      try {
        await inMount(first, appendLoop('crash.log'));
        // With the long delay none is recorded yet; with the short one, some may be.
        if (settle === '100') await waitFor('a first version', async () => ((await first.history('crash.log')).length > 0 ? true : undefined), 20_000);
        first.child.kill('SIGKILL');
        await waitExit(first.child, 10_000);
      } finally {
        if (first.child.exitCode === null && first.child.signalCode === null) first.child.kill('SIGKILL');
      }
      const second = await mountProject({ root });
      try {
        await second.idle();
        await expectEveryAppend(second, 'crash.log', APPENDS);
      } finally {
        await second.dispose();
      }
    }, 120_000);
  }
});
