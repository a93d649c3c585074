// Slow atomic saves through a real FUSE mount (issue 3): a temp file written (and fsynced), left for
// longer than the 100 ms settle delay, then renamed over its target gives exactly one version of the
// target and none of the temp path. `strata mount` runs in a child process; dispose() unmounts.

import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { VersionRecord } from '../engine/types.js';
import { forceUnmount, inMount, type MountedDir, mountProject, sh, waitExit, waitFor } from './mount-harness.js';

let m: MountedDir;

beforeAll(async () => {
  m = await mountProject();
});

afterAll(async () => {
  await m?.dispose();
});

async function projectHistory(): Promise<VersionRecord[]> {
  return (await m.api<{ items: VersionRecord[] }>('GET', `/v1/projects/${m.projectId}/history?limit=1000`)).items;
}

describe('strata mount: slow atomic saves', () => {
  it('python tempfile + fsync, a pause, os.replace over a tracked file: one new version of the target, none of the temp', async () => {
    await inMount(m, 'mkdir py && printf "a,b\\n1,2\\n" > py/data.csv');
    await m.idle();
    expect(await m.history('py/data.csv')).toHaveLength(1);
    const script = [
      'import os, tempfile, time',
      "f = tempfile.NamedTemporaryFile('w', dir='py', suffix='.csv', delete=False)",
      "f.write('a,b\\n'); f.flush()",
      'time.sleep(0.5)',
      "f.write('3,4\\n'); f.flush(); os.fsync(f.fileno()); f.close()",
      'time.sleep(0.5)',
      "os.replace(f.name, 'py/data.csv')",
      'print(os.path.basename(f.name))',
    ].join('\n');
    const result = await sh('python3', ['-c', script], { cwd: m.dir, timeoutMs: 30_000 });
    const temp = result.stdout.trim();
    expect(temp).toMatch(/^tmp[a-z0-9_]{8}\.csv$/);
    await m.idle();
    expect((await m.read('py/data.csv')).toString()).toBe('a,b\n3,4\n');
    expect((await m.history('py/data.csv')).map((v) => v.kind)).toEqual(['write', 'write']);
    expect(await m.history(`py/${temp}`)).toEqual([]);
    expect((await projectHistory()).filter((v) => v.path.startsWith('py/')).map((v) => v.path)).toEqual(['py/data.csv', 'py/data.csv']);
  });

  it('.name.XXXXXX written, left for half a second, moved over a new name: one version', async () => {
    await inMount(m, 'mkdir mk && printf "x\\n" > mk/.model.json.Ab12Cd && sleep 0.5 && mv mk/.model.json.Ab12Cd mk/model.json');
    await m.idle();
    expect((await m.history('mk/model.json')).map((v) => v.kind)).toEqual(['write']);
    expect(await m.history('mk/.model.json.Ab12Cd')).toEqual([]);
  });

  it('a temp-named file that stays is versioned once quiet; tracked, it saves like any file', async () => {
    await inMount(m, 'mkdir keep && printf "keep me\\n" > keep/notes.tmp');
    await waitFor('keep/notes.tmp to be versioned', async () => ((await m.history('keep/notes.tmp')).length === 1 ? true : undefined), 30_000);
    await inMount(m, 'printf "keep me too\\n" > keep/notes.tmp');
    await m.idle();
    expect((await m.history('keep/notes.tmp')).map((v) => v.kind)).toEqual(['write', 'write']);
    expect((await m.read('keep/notes.tmp')).toString()).toBe('keep me too\n');
  });
});

describe('strata mount: a held temp file and kill -9', () => {
  let root: string | undefined;
  afterAll(async () => {
    if (root === undefined) return;
    await forceUnmount(join(root, 'mnt'));
    await rm(root, { recursive: true, force: true });
  });

  it('an fsynced temp file (held, not versioned) is journaled: after kill -9 and a restart its bytes are there', async () => {
    root = await mkdtemp(join(tmpdir(), 'strata-mount-tempcrash-'));
    const first = await mountProject({ root });
    try {
      // Written, fsynced and still open when the mount process dies (inside the 5 s hold).
      const script = `
python3 -c "
import os, time
f = open('tmpab12cd34', 'wb')
f.write(b'T' * 5000)
f.flush(); os.fsync(f.fileno())
open('${root}/synced', 'w').write('ok')
time.sleep(30)
" &
HOLDER=$!
for i in $(seq 1 200); do sleep 0.05; test -s ${root}/synced && break; done
kill -9 ${first.child.pid}
kill $HOLDER 2>/dev/null || true
wait || true
`;
      await sh('bash', ['-c', script], { cwd: first.dir, timeoutMs: 60_000, allowFail: true });
      expect(await readFile(join(root, 'synced'), 'utf8')).toBe('ok');
      await waitExit(first.child, 10_000);
    } finally {
      if (first.child.exitCode === null && first.child.signalCode === null) first.child.kill('SIGKILL');
    }
    const second = await mountProject({ root });
    try {
      await second.idle();
      expect((await second.read('tmpab12cd34')).toString()).toBe('T'.repeat(5000));
      expect((await inMount(second, 'stat -c %s tmpab12cd34')).stdout).toBe('5000\n');
    } finally {
      await second.stop();
    }
  });
});
