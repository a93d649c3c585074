// Retention while a file is open: a process opened a file (a Python session, `less`), an editor's
// atomic save replaced it, and `strata retention set 1` pruned the version the process still had
// open. Its object, older than the GC grace period, was deleted at once; the handle had not read yet
// (a handle opens its content at its first read), so every read(2) on it failed with ENOENT — on a
// descriptor, where a filesystem keeps an unlinked file's bytes readable until the last close. Now a
// node that leaves the tree while open gets its handles' content opened then: they keep the bytes.

import { createHash, randomBytes } from 'node:crypto';
import { access, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inMount, type MountedDir, mountProject, sh, waitFor } from './mount-harness.js';

let m: MountedDir;

beforeAll(async () => {
  m = await mountProject();
});

afterAll(async () => {
  await m?.dispose();
});

const p = (suffix: string) => `/v1/projects/${m.projectId}${suffix}`;

// Opens the file (no read yet), says so, waits for the go file (bounded), then reads it whole.
const HOLDER = `
import hashlib, os, sys, time
path, ready, go = sys.argv[1:4]
fd = os.open(path, os.O_RDONLY)
open(ready, 'w').close()
deadline = time.time() + 20
while not os.path.exists(go) and time.time() < deadline: time.sleep(0.02)
data = b''
while True:
    chunk = os.read(fd, 1 << 20)
    if not chunk: break
    data += chunk
print(hashlib.sha256(data).hexdigest(), len(data))
`;

describe('a version pruned while a process has it open', () => {
  it('the open descriptor still reads the bytes it opened', async () => {
    const old = randomBytes(300_000);
    await writeFile(join(m.root, 'old.bin'), old);
    await inMount(m, `cp ${join(m.root, 'old.bin')} data.bin`);
    await m.idle();
    const [first] = await m.history('data.bin');
    const hex = first!.contentHash!.slice('blake3:'.length);
    const object = join(m.home, 'store', 'objects', hex.slice(0, 2), hex.slice(2));
    // An object written an hour ago: past the GC grace period, as for a file kept for a while.
    const hourAgo = new Date(Date.now() - 3_600_000);
    await utimes(object, hourAgo, hourAgo);

    const ready = join(m.root, 'data.ready');
    const go = join(m.root, 'data.go');
    const holder = sh('python3', ['-c', HOLDER, 'data.bin', ready, go], { cwd: m.dir, timeoutMs: 30_000, allowFail: true });
    await waitFor('the reader to open the file', () => sh('test', ['-e', ready], { allowFail: true }).then((r) => (r.code === 0 ? true : undefined)), 10_000);

    // An editor's atomic save, then retention 1: the version the reader has open is pruned.
    await inMount(m, `python3 -c "
import os
with open('.data.bin.tmp', 'wb') as f:
    f.write(os.urandom(300000)); f.flush(); os.fsync(f.fileno())
os.replace('.data.bin.tmp', 'data.bin')"`);
    await m.idle();
    await m.api('POST', p('/fs/retention'), { maxVersions: 1 });
    expect(await m.history('data.bin')).toHaveLength(1);
    await waitFor('the pruned object to be deleted', () => access(object).then(() => undefined, () => true), 10_000);

    await writeFile(go, '');
    const held = await holder;
    expect(held.stderr).toBe('');
    expect(held.stdout.trim()).toBe(`${createHash('sha256').update(old).digest('hex')} 300000`);
  });
});
