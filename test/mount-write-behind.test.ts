// Write-behind (native/fuse src/write_behind.c): the bytes appended to a new small file and its times
// stay in C until JS needs the file. Whatever makes JS look at the file before its close must see
// every byte the tool wrote: a read, a stat, a write that does not append, growth past the memory
// limit, a truncate, an fsync, a rename, another file's creation, an unmount. Each case below is one
// of those, through real syscalls on the mount, checked against the bytes and the versions recorded.

import { existsSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openLocalEngine } from '../engine/local.js';
import { inMount, type MountedDir, mountProject, sh, waitExit, waitFor } from './mount-harness.js';

let m: MountedDir;

beforeAll(async () => {
  m = await mountProject({ env: { STRATA_MOUNT_OPSTATS: '1', STRATA_LOG_LEVEL: 'info' } });
  await inMount(m, 'mkdir wb');
});

afterAll(async () => {
  await m?.dispose();
});

const python = (script: string) => inMount(m, `python3 - <<'EOF'\n${script}\nEOF`);

const CASES = `
import os, json
out = {}
W = os.O_RDWR | os.O_CREAT | os.O_EXCL

# tar's sequence: appends, utime, fstat, fchown, fchmod, close
fd = os.open('wb/tar.txt', W, 0o644)
os.write(fd, b'a' * 3000); os.write(fd, b'b' * 2000)
os.utime(fd, (1000, 2000))
s = os.fstat(fd)
os.fchown(fd, os.getuid(), os.getgid()); os.fchmod(fd, 0o644)
os.close(fd)
out['tar'] = [s.st_size, int(s.st_mtime), os.stat('wb/tar.txt').st_size, int(os.stat('wb/tar.txt').st_mtime)]

# read back through the same descriptor before close
fd = os.open('wb/read.txt', W, 0o644)
os.write(fd, b'hello '); os.write(fd, b'world')
out['read'] = os.pread(fd, 100, 0).decode()
os.write(fd, b'!')
os.close(fd)

# stat by path from the outside while the file is open
fd = os.open('wb/stat.txt', W, 0o644)
os.write(fd, b'x' * 777)
out['stat'] = os.stat('wb/stat.txt').st_size
os.close(fd)

# a write that does not append
fd = os.open('wb/pwrite.txt', W, 0o644)
os.write(fd, b'hello world')
os.pwrite(fd, b'J', 0)
os.write(fd, b'!')
os.close(fd)

# past the 64 KiB memory limit
fd = os.open('wb/grow.bin', W, 0o644)
os.write(fd, b'1' * 60000); os.write(fd, b'2' * 10000)
os.close(fd)

# truncate in the middle (the next write lands at the descriptor's offset, 100: a hole of zeros)
fd = os.open('wb/trunc.txt', W, 0o644)
os.write(fd, b'z' * 100)
os.ftruncate(fd, 10)
os.write(fd, b'tail')
os.close(fd)

# rename while open, then more writes
fd = os.open('wb/moved.tmp', W, 0o644)
os.write(fd, b'abc')
os.rename('wb/moved.tmp', 'wb/moved.txt')
os.write(fd, b'def')
os.close(fd)

# two new files written in turns
a = os.open('wb/pair-a.txt', W, 0o644)
os.write(a, b'A1')
b = os.open('wb/pair-b.txt', W, 0o644)
os.write(b, b'B1'); os.write(a, b'A2'); os.write(b, b'B2')
os.close(a); os.close(b)

# written, utime'd and never closed until an fsync made it a version
fd = os.open('wb/fsync.txt', W, 0o644)
os.write(fd, b'durable')
os.fsync(fd)
out['fsyncOpen'] = True
os.write(fd, b'!')
os.close(fd)

# an empty file: created and closed
os.close(os.open('wb/empty.txt', W, 0o644))
print(json.dumps(out))
`;

describe('write-behind of new small files', () => {
  it('every byte a tool wrote is there whatever makes JS look at the file first', async () => {
    const out = JSON.parse((await python(CASES)).stdout) as Record<string, unknown>;
    expect(out['tar']).toEqual([5000, 2000, 5000, 2000]);
    expect(out['read']).toBe('hello world');
    expect(out['stat']).toBe(777);
    await m.idle();
    const expected: Record<string, string> = {
      'wb/tar.txt': 'a'.repeat(3000) + 'b'.repeat(2000),
      'wb/read.txt': 'hello world!',
      'wb/stat.txt': 'x'.repeat(777),
      'wb/pwrite.txt': 'Jello world!',
      'wb/grow.bin': '1'.repeat(60000) + '2'.repeat(10000),
      'wb/trunc.txt': `${'z'.repeat(10)}${'\0'.repeat(90)}tail`,
      'wb/moved.txt': 'abcdef',
      'wb/pair-a.txt': 'A1A2',
      'wb/pair-b.txt': 'B1B2',
      'wb/fsync.txt': 'durable!',
      'wb/empty.txt': '',
    };
    for (const [path, content] of Object.entries(expected)) {
      expect((await m.read(path)).toString(), path).toBe(content);
      expect((await inMount(m, `cat ${path}`)).stdout, path).toBe(content);
    }
    // One version per close (an fsync makes the bytes durable, not a version).
    expect((await m.history('wb/tar.txt')).map((v) => v.size)).toEqual([5000]);
    expect((await m.history('wb/fsync.txt')).map((v) => v.size)).toEqual([8]);
    expect(await m.history('wb/moved.tmp')).toHaveLength(0);
    // The times tar set survive the capture.
    expect((await inMount(m, 'stat -c %Y wb/tar.txt')).stdout.trim()).toBe('2000');
  });

  it('was really used: writes and times kept in C, handed over once per file', async () => {
    await python(`
import os
for i in range(50):
    fd = os.open('wb/many-%d.txt' % i, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    os.write(fd, b'line\\n' * (i + 1))
    os.utime(fd, (1000, 1000 + i))
    os.close(fd)
`);
    await m.idle();
    expect((await m.read('wb/many-49.txt')).toString()).toBe('line\n'.repeat(50));
    expect((await inMount(m, 'stat -c %Y wb/many-7.txt')).stdout.trim()).toBe('1007');
    const home = m.home;
    const projectId = m.projectId;
    expect(await m.stop()).toBe(0);
    const line = m.stderr().split('\n').find((l) => l.includes('mount: operation stats'));
    const requests = (JSON.parse(line ?? '{}') as { requests?: Record<string, number> }).requests ?? {};
    expect(requests['Write (kept in C)']).toBeGreaterThanOrEqual(50);
    expect(requests['Setattr of times (kept in C)']).toBeGreaterThanOrEqual(50);
    expect(requests['Write-behind hand-overs to JS']).toBeGreaterThanOrEqual(50);
    expect(requests['Flush (journaled in C)']).toBeGreaterThanOrEqual(50);
    // Written while the mount ran, read back from the store after it stopped.
    const engine = await openLocalEngine({ home });
    try {
      const entry = await engine.engine.stat({ projectId, path: 'wb/many-10.txt' });
      expect(entry?.size).toBe('line\n'.length * 11);
    } finally {
      await engine.close();
    }
  });
});

describe('write-behind and kill -9', () => {
  it('a file whose close C journaled and answered survives the death of the mount before its capture', async () => {
    // A settle delay of a minute: nothing is captured before the kill, only the journal can save them.
    const first = await mountProject({ env: { STRATA_MOUNT_SETTLE_MS: '60000', STRATA_MOUNT_OPSTATS: '1', STRATA_LOG_LEVEL: 'info' } });
    try {
      await inMount(first, `python3 - <<'EOF'
import os
os.mkdir('k')
for i in range(30):
    fd = os.open('k/f-%d.txt' % i, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    os.write(fd, b'closed %d\\n' % i)
    os.write(fd, b'x' * i)
    os.utime(fd, (1000, 2000))
    os.close(fd)
EOF`);
      expect(await first.history('k/f-29.txt')).toHaveLength(0);
      first.child.kill('SIGKILL');
      await waitExit(first.child, 10_000);
      const again = await mountProject({ root: first.root });
      try {
        for (const i of [0, 7, 29]) expect((await again.read(`k/f-${i}.txt`)).toString()).toBe(`closed ${i}\n${'x'.repeat(i)}`);
        expect((await inMount(again, 'ls k | wc -l')).stdout.trim()).toBe('30');
      } finally {
        await again.dispose();
      }
    } finally {
      await first.dispose();
    }
  });
});

describe('write-behind at unmount', () => {
  it('a file still open with kept bytes is versioned with them when the mount stops', async () => {
    const mounted = await mountProject();
    try {
      const ready = join(mounted.root, 'ready');
      const go = join(mounted.root, 'go');
      const holder = sh('python3', ['-c', `
import os, sys, time
fd = os.open('held.txt', os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
os.write(fd, b'kept in C')
open(sys.argv[1], 'w').close()
while not os.path.exists(sys.argv[2]):
    time.sleep(0.02)
try:
    os.close(fd)
except OSError:
    pass
`, ready, go], { cwd: mounted.dir, timeoutMs: 60_000, allowFail: true });
      await waitFor('the holder to write', async () => (existsSync(ready) ? true : undefined), 20_000);
      expect(await mounted.stop()).toBe(0);
      await writeFile(go, '');
      await holder;
      const engine = await openLocalEngine({ home: mounted.home });
      try {
        const entry = await engine.engine.stat({ projectId: mounted.projectId, path: 'held.txt' });
        expect(entry?.size).toBe('kept in C'.length);
      } finally {
        await engine.close();
      }
    } finally {
      await mounted.dispose();
    }
  });
});
