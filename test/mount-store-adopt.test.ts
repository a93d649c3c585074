// ContentStore.adoptFile (zero-copy ingest of the mount's staging files) and objectFile (positional
// reads of loose objects), on the real local store, and the engine's `{ file, adopt }` write path.

import { access, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isStrataError } from '../engine/errors.js';
import { hashBuffer } from '../engine/hash.js';
import { openLocalEngine } from '../engine/local.js';
import type { ContentStore } from '../engine/ports/content-store.js';
import { createLocalContentStore } from '../engine/storage/local-content-store.js';

let root: string;
let store: ContentStore;

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'strata-adopt-'));
  store = await createLocalContentStore({ root: join(root, 'store') });
});

afterEach(async () => {
  await store.close();
  await rm(root, { recursive: true, force: true });
});

const exists = (path: string) => access(path).then(() => true, () => false);

function pattern(size: number, seed: number): Buffer {
  const data = Buffer.alloc(size);
  for (let i = 0; i < size; i += 4) data.writeUInt32LE(((i + seed) * 2654435761) >>> 0, i);
  return data;
}

describe('adoptFile', () => {
  it('moves a large file into the store (no copy): same inode, read-only, readable by hash', async () => {
    const data = pattern(300_000, 1);
    const file = join(root, 'staging.bin');
    await writeFile(file, data);
    const inode = (await stat(file)).ino;
    const result = await store.adoptFile!(file, { knownHash: hashBuffer(data) });
    expect(result).toEqual({ hash: hashBuffer(data), size: data.length, created: true });
    expect(await exists(file)).toBe(false);
    const object = await store.objectFile!(result.hash);
    expect(object).not.toBeNull();
    const info = await stat(object!);
    expect(info.ino).toBe(inode);
    expect(info.mode & 0o777).toBe(0o444);
    expect(await readFile(object!)).toEqual(data);
    expect(await store.verify(result.hash)).toBe('ok');
  });

  it('hashes the file itself when no hash is given', async () => {
    const data = pattern(200_000, 2);
    const file = join(root, 'unhashed.bin');
    await writeFile(file, data);
    const result = await store.adoptFile!(file);
    expect(result.hash).toBe(hashBuffer(data));
    expect(await store.verify(result.hash)).toBe('ok');
  });

  it('drops the file when the object already exists', async () => {
    const data = pattern(150_000, 3);
    await store.putBuffer(data);
    const file = join(root, 'dup.bin');
    await writeFile(file, data);
    const result = await store.adoptFile!(file, { knownHash: hashBuffer(data) });
    expect(result.created).toBe(false);
    expect(await exists(file)).toBe(false);
  });

  it('puts small files in the pack (objectFile is null for them)', async () => {
    const file = join(root, 'small.txt');
    await writeFile(file, 'small\n');
    const result = await store.adoptFile!(file);
    expect(result).toMatchObject({ hash: hashBuffer(Buffer.from('small\n')), size: 6, created: true });
    expect(await exists(file)).toBe(false);
    expect(await store.objectFile!(result.hash)).toBeNull();
    expect((await store.readBuffer(result.hash)).toString()).toBe('small\n');
  });

  it('refuses a file over maxBytes and leaves it in place', async () => {
    const file = join(root, 'big.bin');
    await writeFile(file, pattern(100_000, 4));
    const error = await store.adoptFile!(file, { maxBytes: 99_999 }).catch((e: unknown) => e);
    expect(isStrataError(error, 'BODY_TOO_LARGE')).toBe(true);
    expect(await exists(file)).toBe(true);
  });

  it('objectFile: CONTENT_NOT_FOUND for an absent object, INVALID_ARGUMENT for a bad hash', async () => {
    const absent = await store.objectFile!(hashBuffer(Buffer.from('never stored'))).catch((e: unknown) => e);
    expect(isStrataError(absent, 'CONTENT_NOT_FOUND')).toBe(true);
    const bad = await store.objectFile!('blake3:../../etc/passwd' as `blake3:${string}`).catch((e: unknown) => e);
    expect(isStrataError(bad, 'INVALID_ARGUMENT')).toBe(true);
  });
});

describe('engine writeFile with { file, adopt: true }', () => {
  it('records a version whose content is the adopted file', async () => {
    const local = await openLocalEngine({ home: join(root, 'home') });
    try {
      const { repository, engine } = local;
      await repository.access.createOrganization({ orgId: 'org-1', name: 'o', createdAt: new Date().toISOString() });
      const project = await engine.createProject({ orgId: 'org-1', name: 'p' });
      const data = pattern(500_000, 5);
      const file = join(root, 'home', 'stage.bin');
      await writeFile(file, data);
      const actor = { id: 'u', kind: 'local' as const, name: 'u' };
      const result = await engine.writeFile({ projectId: project.projectId, path: 'd.bin', actor, content: { file, adopt: true, knownHash: hashBuffer(data) } });
      expect(result.version.contentHash).toBe(hashBuffer(data));
      expect(await exists(file)).toBe(false);
      const again = join(root, 'home', 'stage2.bin');
      await writeFile(again, data);
      const unchanged = await engine.writeFile({ projectId: project.projectId, path: 'd.bin', actor, content: { file: again, adopt: true }, ifChanged: true });
      expect(unchanged.unchanged).toBe(true);
      expect(await exists(again)).toBe(false);
    } finally {
      await local.close();
    }
  });
});
