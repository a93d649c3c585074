// Slow atomic saves in watch mode (issue 3): a temp file that lives longer than the 100 ms settle
// delay before it is renamed over its target still gives exactly one version of the target and none
// of the temp path. Real tools (python3's tempfile + os.replace, bash + mv), a real inotify watch.

import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { VersionRecord } from '../engine/types.js';
import { sh, waitFor, type WatchedProject, watchProject } from './daemon-harness.js';

async function projectHistory(w: WatchedProject): Promise<VersionRecord[]> {
  return (await w.api<{ items: VersionRecord[] }>('GET', `/v1/projects/${w.projectId}/history?limit=1000`)).items;
}

describe('watch mode: slow atomic saves', () => {
  let w: WatchedProject;
  beforeEach(async () => {
    w = await watchProject({
      prepare: async (dir) => {
        await writeFile(join(dir, 'data.csv'), 'a,b\n1,2\n');
      },
    });
    await w.idle();
  });
  afterEach(async () => {
    await w.dispose();
  });

  it('python tempfile written in two parts with pauses, then os.replace: one version of the target, none of the temp', async () => {
    // The pauses are far longer than the settle delay (100 ms) and far shorter than the hold (5 s).
    const script = [
      'import os, sys, tempfile, time',
      "f = tempfile.NamedTemporaryFile('w', dir='.', suffix='.csv', delete=False)",
      "f.write('a,b\\n'); f.flush()",
      'time.sleep(0.8)',
      "f.write('3,4\\n'); f.close()",
      'time.sleep(0.8)',
      "os.replace(f.name, 'data.csv')",
      'print(os.path.basename(f.name))',
    ].join('\n');
    const result = await sh('python3', ['-c', script], { cwd: w.dir, timeoutMs: 20_000 });
    const temp = result.stdout.trim();
    expect(temp).toMatch(/^tmp[a-z0-9_]{8}\.csv$/);
    await w.idle();
    expect(await w.read('data.csv')).toBe('a,b\n3,4\n');
    expect((await w.history('data.csv')).map((v) => v.kind)).toEqual(['write', 'write']);
    expect(await w.history(temp)).toEqual([]);
    expect((await projectHistory(w)).map((v) => v.path)).toEqual(['data.csv', 'data.csv']);
  });

  it('.name.XXXXXX (mktemp, rsync) written, left for a second, moved over a new target: one version', async () => {
    await sh('bash', ['-euo', 'pipefail', '-c', 'printf "x\\n" > .model.json.Ab12Cd && sleep 1 && mv .model.json.Ab12Cd model.json'], { cwd: w.dir });
    await w.idle();
    expect((await w.history('model.json')).map((v) => v.kind)).toEqual(['write']);
    expect(await w.history('.model.json.Ab12Cd')).toEqual([]);
  });

  it('a temp-named file that is never renamed is still versioned once quiet; tracked, it saves like any file', async () => {
    await writeFile(join(w.dir, 'notes.tmp'), 'keep me\n');
    await waitFor('notes.tmp to be versioned', async () => ((await w.history('notes.tmp')).length === 1 ? true : undefined), 30_000);
    expect(await w.read('notes.tmp')).toBe('keep me\n');
    await writeFile(join(w.dir, 'notes.tmp'), 'keep me too\n');
    await w.idle();
    expect((await w.history('notes.tmp')).map((v) => v.kind)).toEqual(['write', 'write']);
  });
});
