// Writing into a large versioned file through the mount costs what was written, not the file's size
// (issue 15): the first write no longer copies the base content before it is answered; the staging
// worker copies it in the background (staging-worker-source.ts `fill`), skipping what the tool wrote,
// and reads of what is not copied yet come from the store. These tests check the bytes at every
// step — while the copy may still run, after the capture, for a plain object and for a dataset, after
// a truncate, and after a kill -9 before the capture (recovery finishes the copy from the journal).

import { createHash } from 'node:crypto';
import { mkdir, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inMount, type MountedDir, mountProject, waitExit } from './mount-harness.js';

const MiB = 1024 * 1024;

/** Deterministic bytes that no two offsets share by accident (a counter per 8 bytes). */
function pattern(size: number, seed: number): Buffer {
  const buf = Buffer.alloc(size);
  for (let i = 0; i + 8 <= size; i += 8) buf.writeBigUInt64LE(BigInt(i) * 2654435761n + BigInt(seed), i);
  return buf;
}

const sha = (data: Buffer) => createHash('sha256').update(data).digest('hex');

let m: MountedDir;
let work: string;

beforeAll(async () => {
  m = await mountProject();
  work = join(m.root, 'work');
  await mkdir(work, { recursive: true });
  // Datasets from 16 MiB (the default is 64): the dataset case stays quick.
  await m.api('POST', `/v1/projects/${m.projectId}/fs/datasets/threshold`, { thresholdBytes: 16 * MiB });
});

afterAll(async () => {
  await m?.dispose();
});

/** Puts `data` into the mount at `name` (through cp) and waits for its version. */
async function seed(name: string, data: Buffer): Promise<void> {
  await writeFile(join(work, name), data);
  await inMount(m, `cp '${join(work, name)}' '${name}'`);
  await m.idle();
  expect((await m.stat(name))?.size).toBe(data.length);
}

describe('writes into a large versioned file through the mount', () => {
  for (const [kind, size] of [
    ['a plain object', 6 * MiB + 123],
    ['a dataset', 24 * MiB + 5],
  ] as const) {
    it(`keep every byte of ${kind}: an append, an overwrite in the middle, reads at once, the version`, async () => {
      const name = `big-${size}.bin`;
      const data = pattern(size, size);
      await seed(name, data);
      if (kind === 'a dataset') expect((await m.stat(name))?.dataset).toBe(true);
      const expected = Buffer.concat([data, Buffer.from('appended\n')]);
      Buffer.from('MIDDLE').copy(expected, 3 * MiB + 7);
      // One shell: the reads run right after the writes, while the copy may still be under way.
      const out = await inMount(
        m,
        `printf 'appended\\n' >> '${name}'
printf MIDDLE | dd of='${name}' bs=1 seek=${3 * MiB + 7} conv=notrunc status=none
sha256sum < '${name}' | cut -d' ' -f1
tail -c 9 '${name}'`,
      );
      expect(out.stdout).toBe(`${sha(expected)}\nappended\n`);
      await m.idle();
      const entry = await m.stat(name);
      expect(entry?.size).toBe(expected.length);
      expect(sha(await m.read(name))).toBe(sha(expected));
      // Three versions: the copy, the append, the overwrite (each close that changed content is one).
      expect((await m.history(name)).length).toBe(3);
    }, 120_000);
  }

  it('keep a truncate: shrink then append, the part cut off reads as zeros when the file grows again', async () => {
    const name = 'shrink.bin';
    const data = pattern(5 * MiB, 7);
    await seed(name, data);
    await inMount(m, `truncate -s ${2 * MiB} '${name}' && truncate -s ${3 * MiB} '${name}' && printf tail >> '${name}'`);
    const expected = Buffer.concat([data.subarray(0, 2 * MiB), Buffer.alloc(MiB), Buffer.from('tail')]);
    expect((await inMount(m, `sha256sum < '${name}' | cut -d' ' -f1`)).stdout.trim()).toBe(sha(expected));
    await m.idle();
    expect(sha(await m.read(name))).toBe(sha(expected));
  }, 120_000);
});

describe('a base whose bytes are not plain local files (STRATA_MOUNT_NO_SPANS: as with a packed object)', () => {
  it('is copied whole aside first, and the fill reads that copy around what the tool wrote', async () => {
    const other = await mountProject({ env: { STRATA_MOUNT_NO_SPANS: '1' } });
    try {
      const data = pattern(5 * MiB + 11, 9);
      await writeFile(join(other.root, 'src.bin'), data);
      await inMount(other, `cp '${join(other.root, 'src.bin')}' big.bin`);
      await other.idle();
      const expected = Buffer.concat([data, Buffer.from('more\n')]);
      Buffer.from('HEAD').copy(expected, 0);
      const out = await inMount(
        other,
        `printf 'more\\n' >> big.bin
printf HEAD | dd of=big.bin bs=1 conv=notrunc status=none
sha256sum < big.bin | cut -d' ' -f1`,
      );
      expect(out.stdout).toBe(`${sha(expected)}\n`);
      await other.idle();
      expect(sha(await other.read('big.bin'))).toBe(sha(expected));
      expect((await other.history('big.bin')).length).toBe(3);
      // The copy aside went once the fill had opened it, and the staging file once it was versioned.
      expect((await readdir(join(other.home, 'daemon', 'staging'))).filter((name) => name.includes('.stg'))).toEqual([]);
    } finally {
      await other.dispose();
    }
  }, 120_000);
});

describe('a large file appended to and then a kill -9 before its capture', () => {
  it('is versioned whole at the next start (recovery finishes the copy)', async () => {
    const seeded = await mountProject();
    const data = pattern(40 * MiB, 3);
    try {
      await writeFile(join(seeded.root, 'src.bin'), data);
      await inMount(seeded, `cp '${join(seeded.root, 'src.bin')}' big.bin`);
      await seeded.idle();
      expect(await seeded.stop()).toBe(0);
    } catch (error) {
      await seeded.dispose(); // otherwise `first` below takes over its root (and disposes of it)
      throw error;
    }
    // A settle delay of a minute: nothing is captured before the kill, only the journal can save it;
    // and the background copy takes ~2 s (a 50 ms pause after each MiB): the kill lands in its middle.
    const first = await mountProject({ root: seeded.root, env: { STRATA_MOUNT_SETTLE_MS: '60000', STRATA_MOUNT_FILL_PAUSE_MS: '50' } });
    try {
      const before = await first.history('big.bin');
      expect(before.length).toBe(1);
      await inMount(first, "printf 'after the crash\\n' >> big.bin");
      first.child.kill('SIGKILL');
      await waitExit(first.child, 10_000);
      const again = await mountProject({ root: first.root });
      try {
        const expected = Buffer.concat([data, Buffer.from('after the crash\n')]);
        await again.idle();
        expect(sha(await again.read('big.bin'))).toBe(sha(expected));
        expect((await again.history('big.bin')).length).toBe(before.length + 1);
        expect((await inMount(again, 'tail -c 16 big.bin')).stdout).toBe('after the crash\n');
      } finally {
        await again.dispose();
      }
    } finally {
      await first.dispose();
    }
  }, 180_000);
});
