// Reads of stored content served without JS (daemon/mount/mapped-reads.ts, native/fuse
// src/read_maps.c): after a handle's first read of a large file's unchanged content, native/fuse
// answers its reads itself from the stored object or the dataset's shards — and the bytes are the
// file's. A write through another handle unmaps it: the reader then reads what was written, as on a
// local disk, and readers opened after the capture read the new stored content.

import { createHash } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DaemonStatus } from '../daemon/daemon.js';
import { READAHEAD_KB } from '../daemon/mount/readahead.js';
import { detectFs } from '../daemon/watch/fs-type.js';
import { inMount, type MountedDir, mountProject } from './mount-harness.js';

const MiB = 1024 * 1024;

let m: MountedDir;

beforeAll(async () => {
  m = await mountProject();
  // Datasets from 16 MiB (the default is 64): the dataset case stays quick.
  await m.api('POST', `/v1/projects/${m.projectId}/fs/datasets/threshold`, { thresholdBytes: 16 * MiB });
});

afterAll(async () => {
  await m?.dispose();
});

/** The mount's read requests so far: those JS answered, and those native/fuse answered by itself. */
async function readRequests(): Promise<{ js: number; native: number }> {
  const doc = await m.api<DaemonStatus>('GET', '/v1/daemon/status');
  const mount = doc.projects.find((p) => p.projectId === m.projectId)!.mount!;
  return { js: mount.ops['read']?.count ?? 0, native: mount.requests['Read (served in C)'] ?? 0 };
}

const sha = (data: Buffer) => createHash('sha256').update(data).digest('hex');

function pattern(size: number, seed: number): Buffer {
  const buf = Buffer.alloc(size);
  for (let i = 0; i + 8 <= size; i += 8) buf.writeBigUInt64LE(BigInt(i) * 2654435761n + BigInt(seed), i);
  return buf;
}

describe('reads of large stored files through the mount', () => {
  it('come with a 4 MiB kernel readahead (set by the daemon, as root)', async () => {
    const fs = await detectFs(m.dir);
    expect(fs?.fsType).toBe('fuse.strata');
    expect((await readFile(`/sys/class/bdi/${fs!.device}/read_ahead_kb`, 'utf8')).trim()).toBe(String(READAHEAD_KB));
  });

  for (const [kind, size] of [
    ['a stored object', 8 * MiB + 17],
    ['a dataset', 24 * MiB + 5],
  ] as const) {
  it(`of ${kind} are served by native/fuse after each handle's first read, with the file's bytes`, async () => {
    const data = pattern(size, size);
    const name = `big-${size}.bin`;
    await writeFile(join(m.root, 'seed.bin'), data);
    await inMount(m, `cp '${join(m.root, 'seed.bin')}' ${name}`);
    await m.idle();
    // The pages the write left in the kernel's cache go: the reads below must come from somewhere.
    await inMount(m, 'sync; echo 3 > /proc/sys/vm/drop_caches');
    const { stdout } = await inMount(m, `sha256sum ${name}; dd if=${name} bs=1M skip=3 count=1 status=none | sha256sum`);
    const [whole, slice] = stdout.trim().split('\n').map((line) => line.split(' ')[0]);
    expect(whole).toBe(sha(data));
    expect(slice).toBe(sha(data.subarray(3 * MiB, 4 * MiB)));
    // O_DIRECT: one request per 128 KiB read, in order, none from the page cache or readahead. The
    // first comes to JS (which maps the handle), every later one is answered by native/fuse.
    const before = await readRequests();
    await inMount(m, `dd if=${name} of=/dev/null bs=128k iflag=direct status=none`);
    const after = await readRequests();
    expect(after.js - before.js).toBe(1);
    expect(after.native - before.native).toBe(Math.ceil(size / (128 * 1024)) - 1);
    expect((await m.stat(name))?.dataset).toBe(kind === 'a dataset');
  });
  }

  it('let a writer change the file while a reader holds it open: the reader reads what was written', async () => {
    const data = pattern(4 * MiB, 2);
    await writeFile(join(m.root, 'seed2.bin'), data);
    await inMount(m, `cp '${join(m.root, 'seed2.bin')}' shared.bin`);
    await m.idle();
    // The reader's first read maps it; a second handle writes into the middle and appends; with the
    // page cache dropped, the reader's next reads come to the mount again and must see those bytes.
    const script = [
      'import os',
      "reader = open('shared.bin', 'rb', buffering=0)",
      'first = reader.read(1 << 20)',
      "with open('shared.bin', 'r+b') as writer:",
      '    writer.seek(2 << 20); writer.write(b"WRITTEN")',
      '    writer.seek(0, 2); writer.write(b"appended\\n")',
      'os.sync()',
      "open('/proc/sys/vm/drop_caches', 'w').write('3')",
      'reader.seek(2 << 20)',
      'print(reader.read(7).decode())',
      'reader.seek(-9, 2)',
      'print(reader.read().decode(), end="")',
      'import hashlib; print(hashlib.sha256(first).hexdigest())',
    ].join('\n');
    await writeFile(join(m.root, 'reader.py'), script);
    const { stdout } = await inMount(m, `python3 '${join(m.root, 'reader.py')}'`);
    const lines = stdout.trim().split('\n');
    expect(lines[0]).toBe('WRITTEN');
    expect(lines[1]).toBe('appended');
    expect(lines[2]).toBe(sha(data.subarray(0, MiB)));
    await m.idle();
    const expected = Buffer.concat([data, Buffer.from('appended\n')]);
    Buffer.from('WRITTEN').copy(expected, 2 * MiB);
    expect(sha(await m.read('shared.bin'))).toBe(sha(expected));
    expect((await m.history('shared.bin'))[0]!.size).toBe(expected.length);
    // A reader opened now reads the new stored content (and is mapped to it).
    const { stdout: after } = await inMount(m, 'sync; echo 3 > /proc/sys/vm/drop_caches; sha256sum shared.bin');
    expect(after.split(' ')[0]).toBe(sha(expected));
  });

  it('leave a file open for writing in the page cache: a reader beside it sees its writes at once', async () => {
    const data = pattern(2 * MiB, 3);
    await writeFile(join(m.root, 'seed3.bin'), data);
    await inMount(m, `cp '${join(m.root, 'seed3.bin')}' open.bin`);
    await m.idle();
    // The writer opens first (read-write, nothing truncated): the reader's open must not fail, and it
    // reads what the writer wrote before.
    const script = ['exec 4<>open.bin', 'printf "HEAD" >&4', 'head -c 4 open.bin', 'echo', 'exec 4>&-'].join('\n');
    const { stdout } = await inMount(m, script);
    expect(stdout.trim()).toBe('HEAD');
    await m.idle();
    const expected = Buffer.from(data);
    Buffer.from('HEAD').copy(expected, 0);
    expect(sha(await m.read('open.bin'))).toBe(sha(expected));
  });
});
