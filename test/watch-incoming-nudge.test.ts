// Watch mode brings a change made through the daemon's own engine (the control API, a restore) to
// disk as soon as the engine announces it, not at the next poll of the history: the poll is for other
// processes, and an idle daemon polls once a second (issue 3's near-zero idle CPU). Here the poll is
// set to ten minutes, so only the announcement can bring the files down in time.

import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { type WatchedProject, waitFor, watchProject } from './daemon-harness.js';

let w: WatchedProject | undefined;
afterEach(async () => {
  await w?.dispose();
  w = undefined;
});

const onDisk = (path: string) => readFile(path, 'utf8').catch(() => null);

describe('watch mode: changes of the daemon engine reach the directory without a poll', () => {
  it('a write and a delete through the API are on disk within seconds while the poll waits ten minutes', { timeout: 60_000 }, async () => {
    w = await watchProject({ watch: { feedPollMs: 600_000 } });
    await w.idle();
    const put = async (path: string, body: string) => {
      const response = await fetch(`${w!.daemon.url}/v1/projects/${w!.projectId}/fs/write?path=${encodeURIComponent(path)}`, {
        method: 'PUT',
        headers: { authorization: `Bearer ${w!.daemon.owner.apiKey}`, 'content-type': 'application/octet-stream' },
        body,
      });
      expect(response.status).toBe(201);
    };

    await put('notes/plan.txt', 'from the API\n');
    await waitFor('plan.txt on disk', async () => ((await onDisk(join(w!.dir, 'notes/plan.txt'))) === 'from the API\n' ? true : undefined), 15_000);
    await put('notes/plan.txt', 'second\n');
    await waitFor('plan.txt rewritten', async () => ((await onDisk(join(w!.dir, 'notes/plan.txt'))) === 'second\n' ? true : undefined), 15_000);
    await w.api('POST', `/v1/projects/${w.projectId}/fs/delete`, { path: 'notes/plan.txt' });
    await waitFor('plan.txt removed', async () => ((await stat(join(w!.dir, 'notes/plan.txt')).catch(() => null)) === null ? true : undefined), 15_000);

    // Brought down, never taken for a local change: the API's three records and nothing else.
    await w.idle();
    expect((await w.history('notes/plan.txt')).map((v) => v.kind)).toEqual(['delete', 'write', 'write']);
  });
});
