// The exec bit (issue 3: "Exec bit kept"): part of every version, carried by restore, rename and
// snapshot restore, settable over HTTP, and added to old databases by migration 2.

import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LATEST_SCHEMA_VERSION, MIGRATIONS } from '../engine/storage/sqlite-migrations.js';
import { openSqliteRepository } from '../engine/storage/sqlite-repository.js';
import { openHarness } from './control-api-harness.js';
import { alice, openTestEngine, type TestEngine, tempDir } from './helpers/world.js';

describe('engine: exec bit', () => {
  let t: TestEngine;
  beforeEach(async () => {
    t = await openTestEngine();
  });
  afterEach(async () => {
    await t.dispose();
  });
  const write = (path: string, text: string, executable?: boolean) =>
    t.engine.writeFile({ projectId: t.projectId, path, actor: alice, content: Buffer.from(text), ...(executable === undefined ? {} : { executable }) });

  it('defaults to false; the same bytes with another bit are a new version', async () => {
    const first = await write('run.sh', '#!/bin/sh\necho hi\n');
    expect(first.version.executable).toBe(false);
    expect(first.entry.executable).toBe(false);
    const second = await write('run.sh', '#!/bin/sh\necho hi\n', true);
    expect(second.version.versionId).not.toBe(first.version.versionId);
    expect(second.version.contentHash).toBe(first.version.contentHash);
    expect(second.version.executable).toBe(true);
    expect((await t.engine.stat({ projectId: t.projectId, path: 'run.sh' }))?.executable).toBe(true);
    const history = await t.engine.history({ projectId: t.projectId, path: 'run.sh' });
    expect(history.items.map((v) => v.executable)).toEqual([true, false]);
  });

  it('ifChanged records nothing for the same bytes and bit, but does for another bit', async () => {
    const first = await write('a.m', 'x = 1;');
    const same = await t.engine.writeFile({ projectId: t.projectId, path: 'a.m', actor: alice, content: Buffer.from('x = 1;'), ifChanged: true });
    expect(same.unchanged).toBe(true);
    expect(same.version).toEqual(first.version);
    expect(same.entry).toEqual(first.entry);
    const chmod = await t.engine.writeFile({ projectId: t.projectId, path: 'a.m', actor: alice, content: Buffer.from('x = 1;'), executable: true, ifChanged: true });
    expect(chmod.unchanged).toBeUndefined();
    expect(chmod.version.executable).toBe(true);
    const fresh = await t.engine.writeFile({ projectId: t.projectId, path: 'b.m', actor: alice, content: Buffer.from('y'), ifChanged: true });
    expect(fresh.unchanged).toBeUndefined();
    const history = await t.engine.history({ projectId: t.projectId, path: 'a.m' });
    expect(history.items).toHaveLength(2);
  });

  it('restore, rename and snapshot restore carry the source bit; a delete has none', async () => {
    const plain = await write('tool', 'x');
    const exec = await write('tool', 'x', true);
    const restored = await t.engine.restoreVersion({ projectId: t.projectId, versionId: plain.version.versionId, actor: alice });
    expect(restored.version).toMatchObject({ kind: 'restore', executable: false });
    const again = await t.engine.restoreVersion({ projectId: t.projectId, versionId: exec.version.versionId, actor: alice });
    expect(again.entry.executable).toBe(true);

    const renamed = await t.engine.renameFile({ projectId: t.projectId, from: 'tool', to: 'bin/tool', actor: alice });
    expect(renamed.created.version.executable).toBe(true);
    expect(renamed.created.entry.executable).toBe(true);
    expect(renamed.deleted.executable).toBe(false);

    const snapshot = await t.engine.createSnapshot({ projectId: t.projectId, actor: alice });
    const pins = await t.engine.snapshotEntries({ projectId: t.projectId, snapshotId: snapshot.snapshotId });
    expect(pins.items).toEqual([expect.objectContaining({ path: 'bin/tool', executable: true })]);
    await write('bin/tool', 'x', false);
    const diff = await t.engine.diffSnapshots({ projectId: t.projectId, from: snapshot.snapshotId });
    expect(diff).toEqual([expect.objectContaining({ path: 'bin/tool', change: 'modified' })]);
    const result = await t.engine.restoreSnapshot({ projectId: t.projectId, snapshotId: snapshot.snapshotId, actor: alice });
    expect(result.changed).toBe(1);
    expect(result.versions[0]).toMatchObject({ kind: 'snapshot-restore', executable: true });
    expect((await t.engine.stat({ projectId: t.projectId, path: 'bin/tool' }))?.executable).toBe(true);

    const { version: tomb } = await t.engine.deleteFile({ projectId: t.projectId, path: 'bin/tool', actor: alice });
    expect(tomb.executable).toBe(false);
  });
});

describe('control API: exec bit', () => {
  it('PUT fs/write?executable=true sets it; responses and stat include it; a bad value is INVALID_QUERY', async () => {
    const h = await openHarness();
    try {
      const projectId = await h.createProject('p');
      const url = `/v1/projects/${projectId}/fs/write?path=run.sh&executable=true`;
      const res = await h.request('PUT', url, { payload: Buffer.from('#!/bin/sh\n'), headers: { 'content-type': 'application/octet-stream' } });
      expect(res.statusCode).toBe(201);
      expect(res.json()).toMatchObject({ entry: { executable: true }, version: { executable: true } });
      const plain = await h.request('PUT', `/v1/projects/${projectId}/fs/write?path=data.txt`, {
        payload: Buffer.from('d'),
        headers: { 'content-type': 'application/octet-stream' },
      });
      expect(plain.json()).toMatchObject({ entry: { executable: false }, version: { executable: false } });
      const stat = await h.ok<{ executable: boolean }>('GET', `/v1/projects/${projectId}/fs/stat?path=run.sh`);
      expect(stat.executable).toBe(true);
      const bad = await h.request('PUT', `/v1/projects/${projectId}/fs/write?path=x&executable=maybe`, {
        payload: Buffer.from('d'),
        headers: { 'content-type': 'application/octet-stream' },
      });
      expect(bad.statusCode).toBe(400);
      expect(bad.json().error).toMatchObject({ code: 'INVALID_QUERY', details: { field: 'executable' } });
    } finally {
      await h.dispose();
    }
  });
});

describe('sqlite migration 2', () => {
  it('adds the exec bit to a schema-1 database; existing rows read as not executable', async () => {
    const dir = await tempDir('strata-migration-');
    try {
      const file = join(dir.path, 'metadata.sqlite');
      const old = new Database(file);
      old.exec('CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL)');
      old.exec(MIGRATIONS[0]!.sql);
      old.prepare('INSERT INTO schema_migrations (version, name) VALUES (1, ?)').run(MIGRATIONS[0]!.name);
      const hash = `blake3:${'a'.repeat(64)}`;
      old
        .prepare(
          `INSERT INTO versions (version_id, project_id, path, content_hash, size, actor_id, actor_kind, actor_name, timestamp, kind, restored_from)
           VALUES ('v1', 'p1', 'a.sh', ?, 1, 'u', 'user', 'U', '2026-01-01T00:00:00.000Z', 'write', NULL)`,
        )
        .run(hash);
      old.prepare(`INSERT INTO entries VALUES ('p1', 'a.sh', 1, 'v1', ?, 1, '2026-01-01T00:00:00.000Z')`).run(hash);
      old.close();

      const repository = openSqliteRepository({ file });
      try {
        expect(await repository.versions.get('p1', 'v1')).toMatchObject({ path: 'a.sh', executable: false });
        expect(await repository.versions.getEntry('p1', 'a.sh')).toMatchObject({ versionId: 'v1', executable: false });
      } finally {
        await repository.close();
      }
      const check = new Database(file, { readonly: true });
      expect(check.prepare('SELECT max(version) AS v FROM schema_migrations').get()).toEqual({ v: LATEST_SCHEMA_VERSION });
      check.close();
    } finally {
      await dir.cleanup();
    }
  });
});
