// Symbolic links are versioned as links (issue 15): a version's `symlink` flag, its content the
// link's target bytes. Engine: write, unchanged detection, restore, snapshot restore, diff, rename,
// never a dataset; the control API (write, read, stat, dir); migration 9 on an old database.

import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { StrataError } from '../engine/errors.js';
import { LATEST_SCHEMA_VERSION, MIGRATIONS } from '../engine/storage/sqlite-migrations.js';
import { openSqliteRepository } from '../engine/storage/sqlite-repository.js';
import { hashBuffer } from '../engine/hash.js';
import { openHarness } from './control-api-harness.js';
import { alice, openTestEngine, readAll, type TestEngine, tempDir } from './helpers/world.js';

describe('engine: symbolic links', () => {
  let t: TestEngine;
  beforeEach(async () => {
    t = await openTestEngine();
  });
  afterEach(async () => {
    await t.dispose();
  });
  const write = (path: string, text: string | Buffer, flags: { symlink?: boolean; executable?: boolean; ifChanged?: boolean } = {}) =>
    t.engine.writeFile({ projectId: t.projectId, path, actor: alice, content: Buffer.from(text), ...flags });
  const read = async (path: string) => readAll((await t.engine.readFile({ projectId: t.projectId, path })).stream);

  it('records the target bytes as the content; the flag is on the version, the entry and the listing', async () => {
    // Not UTF-8, relative, pointing outside: stored exactly as given.
    const target = Buffer.from([0x2e, 0x2e, 0x2f, 0xff, 0x66, 0x69, 0x6c, 0x65]);
    const result = await write('data/latest', target, { symlink: true });
    expect(result.version).toMatchObject({ kind: 'write', symlink: true, executable: false, dataset: false, size: target.length, contentHash: hashBuffer(target) });
    expect(result.entry).toMatchObject({ symlink: true, size: target.length });
    expect(await read('data/latest')).toEqual(target);
    expect((await t.engine.stat({ projectId: t.projectId, path: 'data/latest' }))?.symlink).toBe(true);
    const listing = await t.engine.listDirectory({ projectId: t.projectId, path: 'data' });
    expect(listing.items).toEqual([expect.objectContaining({ name: 'latest', type: 'file', symlink: true })]);
    const plain = await write('data/file.txt', 'x');
    expect(plain.version.symlink).toBe(false);
    expect(plain.entry.symlink).toBe(false);
  });

  it('refuses a target no filesystem can hold: empty, NUL inside, 4,096 bytes or more', async () => {
    const bad: Array<[Buffer, string]> = [
      [Buffer.alloc(0), 'empty'],
      [Buffer.from('a\0b'), 'NUL byte'],
      [Buffer.alloc(4096, 0x61), 'too long'],
    ];
    for (const [target, reason] of bad) {
      const error = await write('l', target, { symlink: true }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(StrataError);
      expect(error).toMatchObject({ code: 'INVALID_SYMLINK_TARGET', status: 422, details: { field: 'content', reason } });
      expect((error as StrataError).message).toBe('A symbolic link target must be 1 to 4,095 bytes, none of them NUL');
    }
    // The longest target that is allowed, and a stream that would go on far longer is refused unread.
    expect((await write('l', Buffer.alloc(4095, 0x61), { symlink: true })).version.size).toBe(4095);
    async function* endless() {
      for (;;) yield Buffer.alloc(1024, 0x62);
    }
    await expect(t.engine.writeFile({ projectId: t.projectId, path: 'm', actor: alice, content: endless(), symlink: true })).rejects.toMatchObject({
      code: 'INVALID_SYMLINK_TARGET',
      details: { reason: 'too long' },
    });
    expect(await t.engine.stat({ projectId: t.projectId, path: 'm' })).toBeNull();
  });

  it('a link is never executable nor a dataset, whatever the write or the dataset rules say', async () => {
    const link = await write('big/model.bin', '/scratch/model.bin', { symlink: true, executable: true });
    expect(link.version).toMatchObject({ symlink: true, executable: false, dataset: false });
    await write('big/real.bin', 'bytes');
    // Tracking converts the files it matches: the link stays a link.
    const { converted } = await t.engine.trackDataset({ projectId: t.projectId, pattern: 'big/*.bin', actor: alice });
    expect(converted.map((v) => v.path)).toEqual(['big/real.bin']);
    expect(await t.engine.stat({ projectId: t.projectId, path: 'big/model.bin' })).toMatchObject({ symlink: true, dataset: false });
    // A link written to a tracked path is a link too.
    const later = await write('big/other.bin', '../elsewhere.bin', { symlink: true });
    expect(later.version).toMatchObject({ symlink: true, dataset: false, size: 16 });
  });

  it('ifChanged: the same target is unchanged, the same bytes as a file (or the reverse) are a new version', async () => {
    const link = await write('cfg', 'settings.yaml', { symlink: true });
    const again = await write('cfg', 'settings.yaml', { symlink: true, ifChanged: true });
    expect(again.unchanged).toBe(true);
    expect(again.version).toEqual(link.version);
    const asFile = await write('cfg', 'settings.yaml', { ifChanged: true });
    expect(asFile.unchanged).toBeUndefined();
    expect(asFile.version).toMatchObject({ symlink: false, contentHash: link.version.contentHash });
    const back = await write('cfg', 'settings.yaml', { symlink: true, ifChanged: true });
    expect(back.unchanged).toBeUndefined();
    expect(back.version.symlink).toBe(true);
    const history = await t.engine.history({ projectId: t.projectId, path: 'cfg' });
    expect(history.items.map((v) => v.symlink)).toEqual([true, false, true]);
  });

  it('restore, rename and snapshot restore carry the flag; a diff shows a file↔link change as modified; a delete has none', async () => {
    const link = await write('current', 'v1', { symlink: true });
    const file = await write('current', 'v1');
    const restored = await t.engine.restoreVersion({ projectId: t.projectId, versionId: link.version.versionId, actor: alice });
    expect(restored.version).toMatchObject({ kind: 'restore', symlink: true, restoredFrom: link.version.versionId });
    expect(restored.entry.symlink).toBe(true);
    const asFile = await t.engine.restoreVersion({ projectId: t.projectId, versionId: file.version.versionId, actor: alice });
    expect(asFile.entry.symlink).toBe(false);
    await t.engine.restoreVersion({ projectId: t.projectId, versionId: link.version.versionId, actor: alice });

    const renamed = await t.engine.renameFile({ projectId: t.projectId, from: 'current', to: 'links/current', actor: alice });
    expect(renamed.created.version).toMatchObject({ symlink: true, contentHash: link.version.contentHash });
    expect(renamed.created.entry.symlink).toBe(true);
    expect(renamed.deleted.symlink).toBe(false);

    const snapshot = await t.engine.createSnapshot({ projectId: t.projectId, actor: alice });
    const pins = await t.engine.snapshotEntries({ projectId: t.projectId, snapshotId: snapshot.snapshotId });
    expect(pins.items).toEqual([expect.objectContaining({ path: 'links/current', symlink: true })]);
    // The same bytes, now as a file: a modification.
    await write('links/current', 'v1');
    const diff = await t.engine.diffSnapshots({ projectId: t.projectId, from: snapshot.snapshotId });
    expect(diff).toEqual([
      {
        path: 'links/current',
        change: 'modified',
        before: expect.objectContaining({ symlink: true }),
        after: expect.objectContaining({ symlink: false, contentHash: link.version.contentHash }),
      },
    ]);
    const result = await t.engine.restoreSnapshot({ projectId: t.projectId, snapshotId: snapshot.snapshotId, actor: alice });
    expect(result.changed).toBe(1);
    expect(result.versions[0]).toMatchObject({ kind: 'snapshot-restore', symlink: true });
    expect((await t.engine.stat({ projectId: t.projectId, path: 'links/current' }))?.symlink).toBe(true);

    const { version: tomb } = await t.engine.deleteFile({ projectId: t.projectId, path: 'links/current', actor: alice });
    expect(tomb.symlink).toBe(false);
    // A snapshot restore that brings the link back after the delete.
    const back = await t.engine.restoreSnapshot({ projectId: t.projectId, snapshotId: snapshot.snapshotId, actor: alice });
    expect(back.versions[0]).toMatchObject({ kind: 'snapshot-restore', symlink: true });
  });
});

describe('control API: symbolic links', () => {
  it('PUT fs/write?symlink=true records a link; fs/read returns the target with x-strata-symlink; stat and dir say so', async () => {
    const h = await openHarness();
    try {
      const projectId = await h.createProject('p');
      const put = (query: string, body: Buffer) =>
        h.request('PUT', `/v1/projects/${projectId}/fs/write?${query}`, { payload: body, headers: { 'content-type': 'application/octet-stream' } });
      const res = await put('path=out/latest&symlink=true', Buffer.from('../runs/42'));
      expect(res.statusCode).toBe(201);
      expect(res.json()).toMatchObject({ entry: { symlink: true, executable: false }, version: { symlink: true, size: 10 } });
      const read = await h.request('GET', `/v1/projects/${projectId}/fs/read?path=out/latest`);
      expect(read.statusCode).toBe(200);
      expect(read.rawPayload).toEqual(Buffer.from('../runs/42'));
      expect(read.headers['x-strata-symlink']).toBe('true');
      const plain = await put('path=out/notes.txt', Buffer.from('../runs/42'));
      expect(plain.json()).toMatchObject({ version: { symlink: false } });
      const readPlain = await h.request('GET', `/v1/projects/${projectId}/fs/read?path=out/notes.txt`);
      expect(readPlain.headers['x-strata-symlink']).toBe('false');
      expect(await h.ok('GET', `/v1/projects/${projectId}/fs/stat?path=out/latest`)).toMatchObject({ symlink: true });
      const dir = await h.ok<{ items: Array<{ name: string; symlink?: boolean }> }>('GET', `/v1/projects/${projectId}/fs/dir?path=out`);
      expect(dir.items.map((item) => [item.name, item.symlink])).toEqual([
        ['latest', true],
        ['notes.txt', false],
      ]);
      const history = await h.ok<{ items: Array<{ symlink: boolean }> }>('GET', `/v1/projects/${projectId}/history?path=out/latest`);
      expect(history.items.map((v) => v.symlink)).toEqual([true]);

      const empty = await put('path=x&symlink=true', Buffer.alloc(0));
      expect(empty.statusCode).toBe(422);
      expect(empty.json().error).toMatchObject({ code: 'INVALID_SYMLINK_TARGET', details: { reason: 'empty' } });
      const bad = await put('path=x&symlink=perhaps', Buffer.from('t'));
      expect(bad.statusCode).toBe(400);
      expect(bad.json().error).toMatchObject({ code: 'INVALID_QUERY', details: { field: 'symlink' } });

      const doc = await h.ok<{ components?: unknown; paths: Record<string, unknown> }>('GET', '/openapi.json', { key: null as never });
      expect(JSON.stringify(doc)).toContain('"symlink"');
    } finally {
      await h.dispose();
    }
  });
});

describe('sqlite migration 9', () => {
  it('adds the symlink flag to a schema-8 database; existing rows read as files', async () => {
    const dir = await tempDir('strata-migration-');
    try {
      const file = join(dir.path, 'metadata.sqlite');
      const old = new Database(file);
      old.exec('CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL)');
      for (const migration of MIGRATIONS.filter((m) => m.version <= 8)) {
        old.exec(migration.sql);
        old.prepare('INSERT INTO schema_migrations (version, name) VALUES (?, ?)').run(migration.version, migration.name);
      }
      const hash = `blake3:${'b'.repeat(64)}`;
      old
        .prepare(
          `INSERT INTO versions (version_id, project_id, path, content_hash, size, actor_id, actor_kind, actor_name, timestamp, kind, restored_from, executable, dataset)
           VALUES ('v1', 'p1', 'link', ?, 3, 'u', 'user', 'U', '2026-01-01T00:00:00.000Z', 'write', NULL, 0, 0)`,
        )
        .run(hash);
      old
        .prepare(`INSERT INTO entries (project_id, path, version_seq, version_id, content_hash, size, timestamp, executable, dataset) VALUES ('p1', 'link', 1, 'v1', ?, 3, '2026-01-01T00:00:00.000Z', 0, 0)`)
        .run(hash);
      old.close();

      const repository = openSqliteRepository({ file });
      try {
        expect(await repository.versions.get('p1', 'v1')).toMatchObject({ path: 'link', symlink: false });
        expect(await repository.versions.getEntry('p1', 'link')).toMatchObject({ versionId: 'v1', symlink: false });
      } finally {
        await repository.close();
      }
      const check = new Database(file, { readonly: true });
      expect(check.prepare('SELECT max(version) AS v FROM schema_migrations').get()).toEqual({ v: LATEST_SCHEMA_VERSION });
      expect(LATEST_SCHEMA_VERSION).toBeGreaterThanOrEqual(9);
      const columns = (table: string) => (check.prepare(`PRAGMA table_info(${table})`).all() as Array<{ name: string; dflt_value: string; notnull: number }>).find((c) => c.name === 'symlink');
      expect(columns('versions')).toMatchObject({ dflt_value: '0', notnull: 1 });
      expect(columns('entries')).toMatchObject({ dflt_value: '0', notnull: 1 });
      check.close();
    } finally {
      await dir.cleanup();
    }
  });
});

describe('sync/versions: symbolic links', () => {
  it('stores the flag; refuses a link that is a dataset or whose target no filesystem can hold; the same bytes as a file and as a link conflict', async () => {
    const h = await openHarness();
    try {
      const project = await h.createProject('p');
      const upload = async (bytes: Buffer) => {
        const hash = hashBuffer(bytes);
        const res = await h.request('PUT', `/v1/projects/${project}/sync/objects/${hash}`, { payload: bytes, headers: { 'content-type': 'application/octet-stream' } });
        expect(res.statusCode).toBeLessThan(300);
        return hash;
      };
      const send = (versions: Array<Record<string, unknown>>) => h.request('POST', `/v1/projects/${project}/sync/versions`, { body: { workstation: 'ws1', versions } });
      const target = await upload(Buffer.from('runs/7'));
      const link = { versionId: randomUUID(), path: 'latest', baseVersionId: null, contentHash: target, symlink: true, timestamp: '2026-11-24T16:30:00.000Z' };
      const applied = await send([link]);
      expect(applied.json()).toEqual({ results: [{ versionId: link.versionId, result: 'applied', path: 'latest' }] });
      expect(await h.ok('GET', `/v1/projects/${project}/fs/stat?path=latest`)).toMatchObject({ symlink: true, executable: false, size: 6 });
      const feed = await h.ok<{ items: Array<{ versionId: string; symlink: boolean }> }>('GET', `/v1/projects/${project}/sync/changes`);
      expect(feed.items).toEqual([expect.objectContaining({ versionId: link.versionId, symlink: true })]);

      // Refused whole, nothing applied: a link that says it is a dataset, a target with a NUL.
      const asDataset = await send([{ ...link, versionId: randomUUID(), path: 'x', dataset: true }]);
      expect(asDataset.statusCode).toBe(422);
      expect(asDataset.json().error).toMatchObject({ code: 'INVALID_ARGUMENT', details: { field: 'versions[0].dataset' } });
      const nul = await upload(Buffer.from('a\0b'));
      const good = { ...link, versionId: randomUUID(), path: 'fine', contentHash: target };
      const bad = await send([good, { ...link, versionId: randomUUID(), path: 'bad', contentHash: nul }]);
      expect(bad.statusCode).toBe(422);
      expect(bad.json().error).toMatchObject({ code: 'INVALID_SYMLINK_TARGET', details: { field: 'versions[1].contentHash', reason: 'NUL byte' } });
      expect((await h.request('GET', `/v1/projects/${project}/fs/stat?path=fine`)).statusCode).toBe(404);

      // Two workstations from the same base: one makes `latest` a file with the link's very bytes. Not
      // "the same file made on both sides": a conflict copy keeps it.
      const otherLink = { versionId: randomUUID(), path: 'latest', baseVersionId: link.versionId, contentHash: await upload(Buffer.from('runs/8')), symlink: true, timestamp: '2026-11-24T16:31:00.000Z' };
      expect((await send([otherLink])).json().results[0]).toMatchObject({ result: 'applied' });
      const asFile = { versionId: randomUUID(), path: 'latest', baseVersionId: link.versionId, contentHash: otherLink.contentHash, timestamp: '2026-11-24T16:32:00.000Z' };
      const result = (await send([asFile])).json().results[0];
      expect(result).toMatchObject({ result: 'conflict', conflictWith: otherLink.versionId });
      expect(await h.ok('GET', `/v1/projects/${project}/fs/stat?path=${encodeURIComponent(result.path)}`)).toMatchObject({ symlink: false });
    } finally {
      await h.dispose();
    }
  });
});
