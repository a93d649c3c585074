// Attributes native/fuse answers without JS (src/attrs.c): getattr, and a chown or chmod that changes
// nothing, for a file open for writing with local changes. What a tool sees must be what JS would
// have answered at every step of tar's sequence (create, write, utimens, fstat, fchown, fchmod, close),
// and every change that does reach JS (a write, an exec bit, a new mtime) must show at once.

import { existsSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { VersionRecord } from '../engine/types.js';
import { inMount, type MountedDir, mountProject, sh, waitFor } from './mount-harness.js';

let m: MountedDir;

beforeAll(async () => {
  m = await mountProject({ env: { STRATA_MOUNT_OPSTATS: '1', STRATA_LOG_LEVEL: 'info' } });
});

afterAll(async () => {
  await m?.dispose();
});

const SCRIPT = `
import os, json
out = []
def st(fd):
    s = os.fstat(fd)
    out.append([s.st_size, oct(s.st_mode & 0o7777), int(s.st_mtime)])
fd = os.open('t.py', os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
os.write(fd, b'x' * 100)
os.utime(fd, (1000, 2000))
st(fd)                     # 100, 0o600 (as created), 2000
os.fchown(fd, os.getuid(), os.getgid())
os.fchmod(fd, 0o644)
st(fd)                     # 0o644: a chmod that changes the mode goes to JS
os.write(fd, b'y' * 50)
st(fd)                     # 150, mtime now: the write reached JS, the cached attributes went with it
os.fchmod(fd, 0o755)
st(fd)                     # the exec bit is versioned: JS answers, 0o755
os.fchown(fd, os.getuid(), os.getgid())
st(fd)                     # still 0o755
os.ftruncate(fd, 10)
st(fd)                     # 10 (and mtime now, checked below)
os.utime(fd, (1000, 3000))
st(fd)                     # 3000
os.close(fd)
s = os.stat('t.py')
out.append([s.st_size, oct(s.st_mode & 0o7777), int(s.st_mtime)])
print(json.dumps(out))
`;

// Holds r.txt open with a local append while the test restores an older version through the API,
// then looks again: local changes not yet captured win over a restore (mount-state.ts), so the
// attributes native/fuse kept stay right.
const HOLD = `
import os, sys, json, time
ready, go = sys.argv[1], sys.argv[2]
fd = os.open('r.txt', os.O_WRONLY | os.O_APPEND)
os.write(fd, b'local\\n')
before = os.fstat(fd).st_size
os.fchown(fd, os.getuid(), os.getgid())
open(ready, 'w').close()
while not os.path.exists(go):
    time.sleep(0.02)
after = os.fstat(fd).st_size
os.close(fd)
print(json.dumps([before, after, os.stat('r.txt').st_size]))
`;

describe('attributes answered by native/fuse', () => {
  it('stay right when a restore lands while the file is open with local changes', async () => {
    await inMount(m, 'printf "one\\n" > r.txt');
    await m.idle();
    await inMount(m, 'printf "second version\\n" > r.txt');
    await m.idle();
    const [, first] = (await m.history('r.txt')) as [VersionRecord, VersionRecord];
    const ready = join(m.root, 'ready');
    const go = join(m.root, 'go');
    const holder = sh('python3', ['-c', HOLD, ready, go], { cwd: m.dir, timeoutMs: 30_000 });
    await waitFor('the holder to write', async () => (existsSync(ready) ? true : undefined), 20_000);
    await m.api('POST', `/v1/projects/${m.projectId}/history/restore`, { versionId: first.versionId });
    await writeFile(go, '');
    const local = 'second version\n'.length + 'local\n'.length;
    expect(JSON.parse((await holder).stdout)).toEqual([local, local, local]);
    await m.idle();
    expect((await m.read('r.txt')).toString()).toBe('second version\nlocal\n');
  });

  it("match JS's answers through tar's sequence, and every change shows at once", async () => {
    const result = await inMount(m, `python3 - <<'EOF'\n${SCRIPT}\nEOF`);
    // A write and a truncate set mtime to the present: shown as 'now'.
    const rows = (JSON.parse(result.stdout) as Array<[number, string, number]>).map(([size, mode, mtime]) => [size, mode, Math.abs(mtime - Date.now() / 1000) < 120 ? 'now' : mtime]);
    expect(rows).toEqual([
      [100, '0o600', 2000],
      [100, '0o644', 2000],
      [150, '0o644', 'now'],
      [150, '0o755', 'now'],
      [150, '0o755', 'now'],
      [10, '0o755', 'now'],
      [10, '0o755', 3000],
      [10, '0o755', 3000],
    ]);
    await m.idle();
    const entry = await m.stat('t.py');
    expect(entry?.size).toBe(10);
    expect(entry?.executable).toBe(true);
    expect((await m.read('t.py')).toString()).toBe('x'.repeat(10));

    // The cache was really used (otherwise this test would prove nothing about it).
    expect(await m.stop()).toBe(0);
    const line = m.stderr().split('\n').find((l) => l.includes('mount: operation stats'));
    const requests = (JSON.parse(line ?? '{}') as { requests?: Record<string, number> }).requests ?? {};
    expect(requests['Getattr (answered in C)']).toBeGreaterThan(0);
    expect(requests['Setattr (answered in C)']).toBeGreaterThan(0);
  });
});
