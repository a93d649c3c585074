// native/fuse lends each WRITE request's bytes to JS (the buffer requests are read into) instead of
// copying them into a new Buffer; JS must take them before it returns, since the next request is read
// into the same memory. Writes that cannot take them at once (a file of the backing directory, written
// through libuv's pool; a node whose copy-on-write is under way) copy them first. Two tools writing at
// once is what overwrites the buffer while a write is pending: each file's bytes must still be its own.

import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inMount, type MountedDir, mountProject } from './mount-harness.js';

let m: MountedDir;

beforeAll(async () => {
  m = await mountProject();
  await inMount(m, 'mkdir -p .git lent && head -c 50000 /dev/urandom > lent/seeded-1 && head -c 300000 /dev/urandom > lent/seeded-2');
  await m.idle();
});

afterAll(async () => {
  await m?.dispose();
});

/** A python writer in the background: `size` bytes of a pattern unique to `seed`, in `step`-byte writes. */
function writer(path: string, seed: number, size: number, step: number, flags: string): string {
  return `python3 - <<'EOF' &
import os, struct
data = b''.join(struct.pack('<II', ${seed}, k) * 8192 for k in range(${size} // 65536 + 1))[:${size}]
fd = os.open('${path}', ${flags}, 0o644)
for off in range(0, ${size}, ${step}):
    os.pwrite(fd, data[off:off + ${step}], off)
os.close(fd)
EOF`;
}

/** The writer's bytes: every 8 bytes say whose they are (seed) and which 64 KiB block. */
function expected(seed: number, size: number): string {
  const data = Buffer.alloc(size + 8);
  for (let i = 0; i < size; i += 8) {
    data.writeUInt32LE(seed, i);
    data.writeUInt32LE(Math.floor(i / 65536), i + 4);
  }
  return createHash('sha256').update(data.subarray(0, size)).digest('hex');
}

describe('write requests lent to JS', () => {
  it('keep each file its own bytes while two tools write at once (backing, staged, copy-on-write)', async () => {
    const size = 24 * 1024 * 1024;
    const creat = 'os.O_WRONLY | os.O_CREAT | os.O_TRUNC';
    // Five writers at once: two ignored files (every write goes through the pool, 1 MiB at a time,
    // while the other's next request is read), a new versioned file (taken at once), and two versioned
    // files overwritten in place (the first write waits for the base: read from the store for a small
    // file, a copy started for a large one).
    await inMount(
      m,
      `${writer('.git/pack.bin', 3, size, 1048576, creat)}
${writer('.git/pack-2.bin', 13, size, 1048576, creat)}
${writer('lent/new.bin', 5, size, 1048576, creat)}
${writer('lent/seeded-1', 7, 40000, 4096, 'os.O_WRONLY')}
${writer('lent/seeded-2', 11, 150000, 8192, 'os.O_WRONLY')}
wait`,
    );
    const sums = await inMount(m, 'sha256sum .git/pack.bin .git/pack-2.bin lent/new.bin; head -c 40000 lent/seeded-1 | sha256sum; head -c 150000 lent/seeded-2 | sha256sum');
    const got = sums.stdout.trim().split('\n').map((line) => line.split(' ')[0]);
    expect(got).toEqual([expected(3, size), expected(13, size), expected(5, size), expected(7, 40000), expected(11, 150000)]);
    await m.idle();
    expect(createHash('sha256').update(await m.read('lent/new.bin')).digest('hex')).toBe(expected(5, size));
  }, 120_000);
});
