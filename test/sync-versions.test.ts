// Versions a workstation made, applied on the server (issue 14): in order, with their own ids and
// times, exactly once in effect however often they are sent, and nothing lost when two workstations
// change one path from the same base — the second edit becomes a conflict copy next to the file, an
// edit against a deletion brings the file back, a deletion against an edit gives way.

import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { conflictCopyPath } from '../engine/commands/sync-versions.js';
import { DEFAULT_CHUNKER_PARAMS } from '../engine/datasets/chunker-params.js';
import { encodeManifest, MANIFEST_FORMAT } from '../engine/datasets/manifest.js';
import { hashBuffer } from '../engine/hash.js';
import type { VersionRecord } from '../engine/types.js';
import { type Harness, openHarness } from './control-api-harness.js';
import { type SentVersion, syncedVersions } from './helpers/synced-versions.js';

let h: Harness;
let project: string;

beforeAll(async () => {
  h = await openHarness();
  project = await h.createProject('thesis');
});

afterAll(async () => {
  await h.dispose();
});

const versions = syncedVersions(() => h, () => project);
const { made, read, history } = versions;
const { send } = versions;

describe('sync versions', () => {
  it('applies versions in order with their ids and times; sending them again changes nothing', async () => {
    const v1 = await made('fit.m', null, 'fit v1\n', '2026-11-24T16:30:00.000Z');
    const v2 = await made('fit.m', v1.versionId, 'fit v2\n', '2026-11-24T16:31:00.000Z');
    expect((await send('ws1', [v1, v2])).results).toEqual([
      { versionId: v1.versionId, result: 'applied', path: 'fit.m' },
      { versionId: v2.versionId, result: 'applied', path: 'fit.m' },
    ]);
    expect(await read('fit.m')).toBe('fit v2\n');
    const items = await history('fit.m');
    expect(items.map((v) => [v.versionId, v.timestamp])).toEqual([
      [v2.versionId, '2026-11-24T16:31:00.000Z'],
      [v1.versionId, '2026-11-24T16:30:00.000Z'],
    ]);
    // A retry after a lost answer, a duplicate delivery: same ids, no new versions.
    expect((await send('ws1', [v1, v2])).results.map((r) => r['result'])).toEqual(['duplicate', 'duplicate']);
    expect(await history('fit.m')).toHaveLength(2);
  });

  it('edit against edit: the first stays the file, the second is a conflict copy next to it; both are versions', async () => {
    const base = await made('plot.py', null, 'plot v1\n', '2026-11-24T16:00:00.000Z');
    await send('ws1', [base]);
    const ws2 = await made('plot.py', base.versionId, 'plot from ws2\n', '2026-11-24T16:32:00.000Z');
    const ws1 = await made('plot.py', base.versionId, 'plot from ws1\n', '2026-11-24T16:32:30.000Z');
    expect((await send('ws2', [ws2])).results[0]).toMatchObject({ result: 'applied' });
    const copy = 'plot (conflict ws1 2026-11-24 1632).py';
    expect((await send('ws1', [ws1])).results[0]).toEqual({ versionId: ws1.versionId, result: 'conflict', path: copy, conflictWith: ws2.versionId });
    expect(await read('plot.py')).toBe('plot from ws2\n');
    expect(await read(copy)).toBe('plot from ws1\n');
    // Idempotent too: the copy is not made twice.
    expect((await send('ws1', [ws1])).results[0]).toMatchObject({ result: 'duplicate', path: copy });
    expect(await history(copy)).toHaveLength(1);
  });

  it('two saves made offline against an edit made elsewhere: one conflict copy, with both saves as its versions', async () => {
    const base = await made('fit2.m', null, 'fit v1\n', '2026-11-24T18:00:00.000Z');
    await send('ws1', [base]);
    const elsewhere = await made('fit2.m', base.versionId, 'fit from ws2\n', '2026-11-24T18:05:00.000Z');
    expect((await send('ws2', [elsewhere])).results[0]).toMatchObject({ result: 'applied' });
    const first = await made('fit2.m', base.versionId, 'offline 1\n', '2026-11-24T18:10:00.000Z');
    const second = await made('fit2.m', first.versionId, 'offline 2\n', '2026-11-24T18:20:00.000Z');
    const copy = 'fit2 (conflict ws1 2026-11-24 1810).m';
    expect((await send('ws1', [first, second])).results).toEqual([
      { versionId: first.versionId, result: 'conflict', path: copy, conflictWith: elsewhere.versionId },
      { versionId: second.versionId, result: 'conflict', path: copy, conflictWith: elsewhere.versionId },
    ]);
    expect(await read('fit2.m')).toBe('fit from ws2\n');
    expect(await read(copy)).toBe('offline 2\n');
    expect((await history(copy)).map((v) => v.versionId)).toEqual([second.versionId, first.versionId]);
    // A third save sent later continues the same copy.
    const third = await made('fit2.m', second.versionId, 'offline 3\n', '2026-11-24T18:30:00.000Z');
    expect((await send('ws1', [third])).results[0]).toMatchObject({ result: 'conflict', path: copy });
    const root = await h.ok<{ items: Array<{ name: string }> }>('GET', `/v1/projects/${project}/fs/dir`);
    expect(root.items.map((entry) => entry.name).filter((name) => name.startsWith('fit2 (conflict'))).toEqual([copy]);
  });

  it('edit against delete brings the file back; delete against edit keeps the edit', async () => {
    const base = await made('notes.txt', null, 'notes v1\n', '2026-11-24T17:00:00.000Z');
    await send('ws1', [base]);
    const deleted = await made('notes.txt', base.versionId, null, '2026-11-24T17:01:00.000Z');
    expect((await send('ws2', [deleted])).results[0]).toMatchObject({ result: 'applied' });
    const edited = await made('notes.txt', base.versionId, 'notes edited offline\n', '2026-11-24T17:02:00.000Z');
    expect((await send('ws1', [edited])).results[0]).toMatchObject({ result: 'applied', path: 'notes.txt' });
    expect(await read('notes.txt')).toBe('notes edited offline\n');

    const lateDelete = await made('notes.txt', base.versionId, null, '2026-11-24T17:03:00.000Z');
    expect((await send('ws2', [lateDelete])).results[0]).toEqual({
      versionId: lateDelete.versionId,
      result: 'superseded',
      path: 'notes.txt',
      currentVersionId: edited.versionId,
    });
    expect(await read('notes.txt')).toBe('notes edited offline\n');

    // A deletion based on nothing (the workstation never had the file) records no tombstone.
    const ofNothing = await made('never-here.txt', null, null, '2026-11-24T17:04:00.000Z');
    expect((await send('ws2', [ofNothing])).results[0]).toMatchObject({ result: 'superseded', currentVersionId: null });
    expect(await history('never-here.txt')).toEqual([]);
  });

  it('a file against a directory of the same name, either way round: nothing is refused, the later one is a conflict copy', async () => {
    // ws2 made a directory `fd/` offline, ws1 a file `fd`: ws2 reached the server first.
    const inner = await made('fd/inner.txt', null, 'made in the directory on ws2\n', '2026-11-24T19:00:00.000Z');
    expect((await send('ws2', [inner])).results[0]).toMatchObject({ result: 'applied', path: 'fd/inner.txt' });
    const file = await made('fd', null, 'a file on ws1\n', '2026-11-24T19:01:00.000Z');
    const fileCopy = 'fd (conflict ws1 2026-11-24 1901)';
    expect((await send('ws1', [file])).results[0]).toMatchObject({ versionId: file.versionId, result: 'conflict', path: fileCopy });
    expect(await read(fileCopy)).toBe('a file on ws1\n');
    expect(await read('fd/inner.txt')).toBe('made in the directory on ws2\n');

    // The other way round: the file `gd` first, then the directory's files below a copy of its name.
    const gd = await made('gd', null, 'a file on ws1\n', '2026-11-24T19:02:00.000Z');
    expect((await send('ws1', [gd])).results[0]).toMatchObject({ result: 'applied', path: 'gd' });
    const below = await made('gd/sub/inner.txt', null, 'below the directory on ws2\n', '2026-11-24T19:03:00.000Z');
    const belowCopy = 'gd (conflict ws2 2026-11-24 1903)/sub/inner.txt';
    expect((await send('ws2', [below])).results[0]).toMatchObject({ versionId: below.versionId, result: 'conflict', path: belowCopy });
    expect(await read(belowCopy)).toBe('below the directory on ws2\n');
    expect(await read('gd')).toBe('a file on ws1\n');
  });

  it('bad input changes nothing: content never sent, a malformed id, a bad workstation name, a viewer', async () => {
    const before = await history('fit.m');
    const good = await made('fit.m', before[0]!.versionId, 'fit v3\n', '2026-11-24T18:00:00.000Z');
    const neverSent = { ...good, versionId: randomUUID(), contentHash: hashBuffer(Buffer.from('never uploaded\n')) };
    const refused = await h.request('POST', `/v1/projects/${project}/sync/versions`, { body: { workstation: 'ws1', versions: [good, neverSent] } });
    expect(refused.statusCode).toBe(422);
    expect(refused.json()).toMatchObject({ error: { code: 'CONTENT_NOT_AVAILABLE', details: { hashes: [neverSent.contentHash] } } });
    const badId = await h.request('POST', `/v1/projects/${project}/sync/versions`, { body: { workstation: 'ws1', versions: [good, { ...good, versionId: 'x' }] } });
    expect(badId.json()).toMatchObject({ error: { code: 'INVALID_ARGUMENT', details: { field: 'versions[1].versionId' } } });
    const badName = await h.request('POST', `/v1/projects/${project}/sync/versions`, { body: { workstation: '../ws', versions: [good] } });
    expect(badName.json()).toMatchObject({ error: { code: 'INVALID_ARGUMENT', details: { field: 'workstation' } } });
    const viewer = await h.createKey({ purpose: 'viewer ws', role: 'viewer' });
    const forbidden = await h.request('POST', `/v1/projects/${project}/sync/versions`, { body: { workstation: 'ws3', versions: [good] }, key: viewer.apiKey });
    expect(forbidden.statusCode).toBe(403);
    expect(await history('fit.m')).toEqual(before);

    // Another project's version id is not this project's to reuse.
    const otherProject = await h.createProject('other');
    const theirs = await h.ok<{ version: VersionRecord }>('PUT', `/v1/projects/${otherProject}/fs/write?path=a.txt`, { status: 201 });
    const reused = { ...good, versionId: theirs.version.versionId };
    expect((await send('ws1', [reused])).results[0]).toMatchObject({ result: 'refused', code: 'VERSION_ID_TAKEN' });
  });

  it('names conflict copies next to the file, keeping the extension', () => {
    expect(conflictCopyPath('a/b/fit.m', 'ws2', '2026-11-24T16:32:05.000Z')).toBe('a/b/fit (conflict ws2 2026-11-24 1632).m');
    expect(conflictCopyPath('.bashrc', 'lab', '2026-01-02T03:04:00.000Z', 2)).toBe('.bashrc (conflict lab 2026-01-02 0304 2)');
    expect(conflictCopyPath('Makefile', 'lab', '2026-01-02T03:04:00.000Z')).toBe('Makefile (conflict lab 2026-01-02 0304)');
  });

  it('a dataset: applied only with its manifest and every shard; then read back assembled, and its parts fetched by hash', async () => {
    const parts = [Buffer.from('first shard of run 7\n'), Buffer.from('second shard of run 7\n')];
    const shards = parts.map((part) => ({ hash: hashBuffer(part), size: part.length }));
    const whole = Buffer.concat(parts);
    const manifest = encodeManifest({ format: MANIFEST_FORMAT, chunker: DEFAULT_CHUNKER_PARAMS, size: whole.length, hash: hashBuffer(whole), shards });
    const manifestHash = hashBuffer(manifest);
    const put = async (bytes: Buffer) =>
      expect((await h.request('PUT', `/v1/projects/${project}/sync/objects/${hashBuffer(bytes)}`, { payload: bytes, headers: { 'content-type': 'application/octet-stream' } })).statusCode).toBeLessThan(300);
    await put(manifest);
    await put(parts[0]!);
    const version = { versionId: randomUUID(), path: 'data/run7.bin', baseVersionId: null, contentHash: manifestHash, dataset: true, timestamp: '2026-11-25T10:00:00.000Z' };
    const url = `/v1/projects/${project}/sync/versions`;
    // A shard the project was never sent: nothing is applied, and the answer names it.
    const absent = await h.request('POST', url, { body: { workstation: 'ws1', versions: [version] } });
    expect(absent.statusCode).toBe(422);
    expect(absent.json().error).toMatchObject({ code: 'CONTENT_NOT_AVAILABLE', details: { hashes: [shards[1]!.hash] } });
    // Bytes that are not a manifest, sent as one.
    const notManifest = { ...version, versionId: randomUUID(), contentHash: shards[0]!.hash };
    const invalid = await h.request('POST', url, { body: { workstation: 'ws1', versions: [notManifest] } });
    expect(invalid.statusCode).toBe(422);
    expect(invalid.json().error).toMatchObject({ code: 'INVALID_ARGUMENT', details: { field: 'versions[0].contentHash' } });
    expect(await history('data/run7.bin')).toHaveLength(0);

    await put(parts[1]!);
    expect((await send('ws1', [version as SentVersion])).results).toEqual([{ versionId: version.versionId, result: 'applied', path: 'data/run7.bin' }]);
    expect(await read('data/run7.bin')).toBe(whole.toString());
    expect(await history('data/run7.bin')).toMatchObject([{ versionId: version.versionId, dataset: true, size: whole.length }]);
    const fetched = await h.request('GET', `/v1/projects/${project}/sync/objects/${shards[1]!.hash}`);
    expect(fetched.statusCode).toBe(200);
    expect(fetched.rawPayload.equals(parts[1]!)).toBe(true);
    expect((await h.request('GET', `/v1/projects/${project}/sync/objects/${manifestHash}`)).rawPayload.equals(manifest)).toBe(true);
    // Content another project has is not this one's to read, whatever the shared store holds.
    const other = await h.createProject('other');
    const foreign = await h.request('GET', `/v1/projects/${other}/sync/objects/${shards[1]!.hash}`);
    expect(foreign.statusCode).toBe(404);
    expect(foreign.json().error.code).toBe('CONTENT_NOT_FOUND');
  });

  it('a snapshot from a workstation: its pins must be here (or it is sent as partial); a repeat is a duplicate; bad input changes nothing', async () => {
    const v1 = await made('snap/a.txt', null, 'a\n', '2026-11-25T11:00:00.000Z');
    const unsent = randomUUID();
    expect((await send('ws1', [v1])).results[0]).toMatchObject({ result: 'applied' });
    const url = `/v1/projects/${project}/sync/snapshots`;
    const body = {
      snapshotId: randomUUID(),
      message: 'taken offline',
      timestamp: '2026-11-25T11:05:00.000Z',
      entries: [
        { path: 'snap/a.txt', versionId: v1.versionId },
        { path: 'snap/b.txt', versionId: unsent },
      ],
    };
    const before = await h.ok<{ items: unknown[] }>('GET', `/v1/projects/${project}/fs/snapshots?limit=1000`);
    const early = await h.request('POST', url, { body });
    expect(early.statusCode).toBe(422);
    expect(early.json().error).toMatchObject({ code: 'SNAPSHOT_PINS_MISSING', details: { paths: ['snap/b.txt'], count: 1 } });
    for (const [bad, field] of [
      [{ ...body, snapshotId: 'nope' }, 'snapshotId'],
      [{ ...body, timestamp: 'yesterday' }, 'timestamp'],
      [{ ...body, entries: [body.entries[0], body.entries[0]] }, 'entries[1].path'],
      [{ ...body, entries: [{ path: '../x', versionId: v1.versionId }] }, 'entries[0].path'],
    ] as const) {
      const refused = await h.request('POST', url, { body: bad });
      expect(refused.statusCode, JSON.stringify(bad)).toBeGreaterThanOrEqual(400);
      expect(refused.statusCode).toBeLessThan(500);
      expect(refused.json().error.details?.field).toBe(field);
    }
    expect((await h.ok<{ items: unknown[] }>('GET', `/v1/projects/${project}/fs/snapshots?limit=1000`)).items).toHaveLength(before.items.length);

    const partial = await h.ok<{ result: string; snapshot: { snapshotId: string; fileCount: number; message: string; timestamp: string }; missing: string[] }>('POST', url, {
      body: { ...body, partial: true },
    });
    expect(partial).toMatchObject({ result: 'applied', missing: ['snap/b.txt'], snapshot: { snapshotId: body.snapshotId, fileCount: 1, message: 'taken offline', timestamp: body.timestamp } });
    expect((await h.ok<{ result: string }>('POST', url, { body })).result).toBe('duplicate');
    const feed = await h.ok<{ items: Array<{ snapshotId: string; seq: number }>; more: boolean }>('GET', `/v1/projects/${project}/sync/snapshots?afterSeq=0`);
    expect(feed.items.at(-1)?.snapshotId).toBe(body.snapshotId);
    const entries = await h.ok<{ items: Array<{ path: string; versionId: string }> }>('GET', `/v1/projects/${project}/fs/snapshots/${body.snapshotId}/entries`);
    expect(entries.items.map((e) => [e.path, e.versionId])).toEqual([['snap/a.txt', v1.versionId]]);
    // The id is this project's: another project cannot take it.
    const other = await h.createProject('another');
    const taken = await h.request('POST', `/v1/projects/${other}/sync/snapshots`, { body: { ...body, entries: [], partial: true } });
    expect(taken.statusCode).toBe(409);
    expect(taken.json().error.code).toBe('SNAPSHOT_ID_TAKEN');
  });
});
