// Content by hash for sync (issue 14, first part): a workstation asks which contents a project lacks
// and uploads only those. Each upload is verified against its BLAKE3 (a mismatch is 422 and stores
// nothing); what a project "has" is what it references or was sent, never what the shared store holds
// for other projects or organizations; a viewer cannot upload; gc keeps what was uploaded.

import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_CHUNKER_PARAMS } from '../engine/datasets/chunker-params.js';
import { encodeManifest, MANIFEST_FORMAT } from '../engine/datasets/manifest.js';
import { hashBuffer } from '../engine/hash.js';
import { chunkFile } from '../engine/storage/chunk-file.js';
import { type Harness, openHarness } from './control-api-harness.js';

let h: Harness;
let project: string;
let other: string;

beforeAll(async () => {
  h = await openHarness();
  project = await h.createProject('thesis');
  other = await h.createProject('other');
});

afterAll(async () => {
  await h.dispose();
});

const hashOf = (text: string) => hashBuffer(Buffer.from(text));
const missing = async (projectId: string, hashes: string[], key?: string) =>
  (await h.ok<{ missing: string[] }>('POST', `/v1/projects/${projectId}/sync/objects/missing`, { body: { hashes }, ...(key ? { key } : {}) })).missing;
const upload = (projectId: string, hash: string, payload: string, key?: string) =>
  h.request('PUT', `/v1/projects/${projectId}/sync/objects/${hash}`, {
    payload: Buffer.from(payload),
    headers: { 'content-type': 'application/octet-stream' },
    ...(key ? { key } : {}),
  });

describe('sync objects', () => {
  it('answers which hashes the project lacks, and uploads only those; a repeat is a no-op', async () => {
    const a = hashOf('fit.m v1\n');
    const b = hashOf('data.csv\n');
    expect(await missing(project, [a, b, a])).toEqual([a, b]);

    const first = await upload(project, a, 'fit.m v1\n');
    expect(first.statusCode).toBe(201);
    expect(first.json()).toEqual({ contentHash: a, size: 9, created: true });
    expect(await missing(project, [a, b])).toEqual([b]);
    // Sent again (a retry): nothing new stored, still fine.
    const again = await upload(project, a, 'fit.m v1\n');
    expect(again.statusCode).toBe(200);
    expect(again.json()).toMatchObject({ created: false });
    expect(await h.local.store.readBuffer(a)).toEqual(Buffer.from('fit.m v1\n'));
  });

  it('refuses bytes that do not hash to the hash they were sent as, and stores nothing', async () => {
    const claimed = hashOf('what the client says\n');
    const sent = 'something else\n';
    const response = await upload(project, claimed, sent);
    expect(response.statusCode).toBe(422);
    expect(response.json()).toMatchObject({ error: { code: 'CONTENT_HASH_MISMATCH', details: { expected: claimed, actual: hashOf(sent) } } });
    expect(await h.local.store.has(claimed)).toBe(false);
    expect(await h.local.store.has(hashOf(sent))).toBe(false);
    expect(await missing(project, [claimed])).toEqual([claimed]);
  });

  it('takes many small contents in one request, each verified; one that does not match fails it', async () => {
    const texts = ['a.m\n', 'b.m\n', 'c.m, a bit longer\n'];
    const frames = (items: Array<[string, string]>) =>
      Buffer.concat(items.flatMap(([hash, text]) => [Buffer.from(`${hash} ${Buffer.byteLength(text)}\n`), Buffer.from(text)]));
    const batch = (payload: Buffer) =>
      h.request('POST', `/v1/projects/${project}/sync/objects`, { payload, headers: { 'content-type': 'application/octet-stream' } });
    const hashes = texts.map(hashOf);
    expect(await missing(project, hashes)).toEqual(hashes);
    const stored = await batch(frames(texts.map((text, i) => [hashes[i]!, text])));
    expect(stored.statusCode, stored.body).toBe(200);
    expect(stored.json()).toEqual({ stored: 3, bytes: texts.reduce((n, t) => n + t.length, 0) });
    expect(await missing(project, hashes)).toEqual([]);

    const liar = hashOf('what it claims\n');
    const mismatch = await batch(frames([[hashOf('d.m\n'), 'd.m\n'], [liar, 'something else\n']]));
    expect(mismatch.statusCode).toBe(422);
    expect(mismatch.json().error).toMatchObject({ code: 'CONTENT_HASH_MISMATCH', details: { expected: liar, index: 1 } });
    expect(await missing(project, [hashOf('d.m\n'), liar])).toEqual([hashOf('d.m\n'), liar]);

    const truncated = await batch(Buffer.from(`${hashOf('e.m\n')} 100\nshort`));
    expect(truncated.statusCode).toBe(422);
    expect(truncated.json().error.code).toBe('INVALID_ARGUMENT');
  });

  it("does not tell a project that content is stored because another project has it", async () => {
    await h.ok('PUT', `/v1/projects/${other}/fs/write?path=secret.txt`, { body: 'the other project\n', status: 201 });
    const secret = hashOf('the other project\n');
    expect(await h.local.store.has(secret)).toBe(true);
    // Missing for this project: it must send the bytes (which proves it has them) to use them.
    expect(await missing(project, [secret])).toEqual([secret]);
    expect(await missing(other, [secret])).toEqual([]);
    // Written through the file API, a content counts as the project's.
    await h.ok('PUT', `/v1/projects/${project}/fs/write?path=notes.txt`, { body: 'notes\n', status: 201 });
    expect(await missing(project, [hashOf('notes\n')])).toEqual([]);
  });

  it('bad input is a coded 4xx: a malformed hash, too many hashes, a viewer uploading', async () => {
    const bad = await h.request('POST', `/v1/projects/${project}/sync/objects/missing`, { body: { hashes: ['sha1:abc'] } });
    expect(bad.statusCode).toBe(422);
    expect(bad.json()).toMatchObject({ error: { code: 'INVALID_ARGUMENT', details: { field: 'hashes[0]' } } });
    const many = await h.request('POST', `/v1/projects/${project}/sync/objects/missing`, { body: { hashes: Array.from({ length: 1_001 }, (_, i) => hashOf(String(i))) } });
    expect(many.statusCode).toBeGreaterThanOrEqual(400);
    expect(many.statusCode).toBeLessThan(500);
    const badPath = await upload(project, 'blake3:..%2F..%2Fescape', 'x');
    expect(badPath.statusCode).toBe(422);

    const viewer = await h.createKey({ purpose: 'viewer', role: 'viewer' });
    const v = hashOf('from a viewer\n');
    const refused = await upload(project, v, 'from a viewer\n', viewer.apiKey);
    expect(refused.statusCode).toBe(403);
    expect(await h.local.store.has(v)).toBe(false);
    const asked = await h.request('POST', `/v1/projects/${project}/sync/objects/missing`, { body: { hashes: [v] }, key: viewer.apiKey });
    expect(asked.statusCode).toBe(403);
  });

  it('gc keeps content uploaded to a project before any record uses it; fsck counts it', async () => {
    const kept = hashOf('uploaded, not yet committed\n');
    expect((await upload(project, kept, 'uploaded, not yet committed\n')).statusCode).toBe(201);
    // An object nobody references or uploaded (the bytes of the refused mismatch, had they been kept):
    // gc deletes it once the grace period is over, so it is not merely idle.
    const orphan = (await h.local.store.putBuffer(Buffer.from('nobody wants this\n'))).hash;
    h.clock.advance(3_600_000);
    const gc = await h.ok<{ objectsDeleted: number }>('POST', '/v1/admin/gc', { body: {} });
    // The orphan, and the two objects of the refused batch above (stored before the mismatch showed,
    // never the project's: garbage from the start).
    expect(gc.objectsDeleted).toBe(3);
    expect(await h.local.store.has(orphan)).toBe(false);
    expect(await h.local.store.has(kept)).toBe(true);
    expect(await h.ok('POST', '/v1/admin/fsck', { body: {} })).toMatchObject({ ok: true });
  });

  it('a dataset sent whole is cut into its manifest\'s shards; one cut off midway keeps the shards that arrived', async () => {
    const bytes = randomBytes(8 * 1024 * 1024);
    const scratch = await mkdtemp(join(tmpdir(), 'strata-sync-dataset-'));
    let manifest: Buffer;
    try {
      await writeFile(join(scratch, 'run.bin'), bytes);
      const cut = await chunkFile(join(scratch, 'run.bin'), DEFAULT_CHUNKER_PARAMS);
      const shards = cut.chunks.map((c) => ({ hash: c.hash, size: c.size }));
      manifest = encodeManifest({ format: MANIFEST_FORMAT, chunker: DEFAULT_CHUNKER_PARAMS, size: cut.size, hash: cut.hash, shards });
    } finally {
      await rm(scratch, { recursive: true, force: true });
    }
    const manifestHash = hashBuffer(manifest);
    const shardHashes = [...new Set((JSON.parse(manifest.toString()) as { shards: Array<{ hash: string }> }).shards.map((s) => s.hash))];
    expect(shardHashes.length).toBeGreaterThan(3);
    const sendWhole = (payload: Buffer) =>
      h.request('PUT', `/v1/projects/${project}/sync/datasets/${manifestHash}`, { payload, headers: { 'content-type': 'application/octet-stream' } });

    // The manifest goes first.
    const early = await sendWhole(bytes);
    expect(early.statusCode).toBe(422);
    expect(early.json().error.code).toBe('CONTENT_NOT_AVAILABLE');
    expect((await upload(project, manifestHash, manifest.toString('latin1'))).statusCode).toBeLessThan(300);

    // Cut off after 5 of 8 MiB: not the dataset (422), but the shards that arrived whole count.
    const cutOff = await sendWhole(bytes.subarray(0, 5 * 1024 * 1024));
    expect(cutOff.statusCode).toBe(422);
    expect(cutOff.json().error.code).toBe('CONTENT_HASH_MISMATCH');
    const left = await missing(project, shardHashes);
    expect(left.length).toBeGreaterThan(0);
    expect(left.length).toBeLessThan(shardHashes.length);
    expect(left).toEqual(shardHashes.slice(shardHashes.length - left.length));

    const whole = await sendWhole(bytes);
    expect(whole.statusCode, whole.body).toBe(200);
    expect(whole.json()).toMatchObject({ size: bytes.length, shards: shardHashes.length });
    expect(await missing(project, shardHashes)).toEqual([]);
    // More bytes than the manifest says: refused, nothing of it counts.
    const tooLong = await sendWhole(Buffer.concat([bytes, Buffer.from('x')]));
    expect(tooLong.statusCode).toBe(413);
  });

  it('composes objects from content the project has plus new bytes, each verified; a copy of content it lacks is refused', async () => {
    const base = Buffer.from('0123456789'.repeat(1000));
    const baseHash = hashBuffer(base);
    expect((await upload(project, baseHash, base.toString())).statusCode).toBeLessThan(300);
    const edited = Buffer.concat([base.subarray(0, 4000), Buffer.from('NEW BYTES'), base.subarray(4000)]);
    const editedHash = hashBuffer(edited);
    const compose = (objects: unknown, literal: Buffer, projectId = project) =>
      h.request('POST', `/v1/projects/${projectId}/sync/objects/compose`, {
        payload: Buffer.concat([Buffer.from(`${JSON.stringify({ objects })}\n`), literal]),
        headers: { 'content-type': 'application/octet-stream' },
      });
    const parts = [{ from: baseHash, offset: 0, length: 4000 }, { literal: 9 }, { from: baseHash, offset: 4000, length: 6000 }];
    // Wrong bytes for the hash: refused, nothing counts.
    const wrong = await compose([{ hash: editedHash, parts }], Buffer.from('NEW BYTEZ'));
    expect(wrong.statusCode).toBe(422);
    expect(wrong.json().error.code).toBe('CONTENT_HASH_MISMATCH');
    expect(await missing(project, [editedHash])).toEqual([editedHash]);
    // A copy of content this project does not have (another project has it).
    const foreign = await compose([{ hash: editedHash, parts }], Buffer.from('NEW BYTES'), other);
    expect(foreign.statusCode).toBe(422);
    expect(foreign.json().error.code).toBe('CONTENT_NOT_AVAILABLE');
    // Malformed: literal bytes that do not add up, a copy past the end, no JSON line.
    expect((await compose([{ hash: editedHash, parts }], Buffer.from('NEW'))).json().error.details.field).toBe('body');
    const pastEnd = await compose([{ hash: editedHash, parts: [{ from: baseHash, offset: 9000, length: 5000 }] }], Buffer.alloc(0));
    expect(pastEnd.statusCode).toBe(422);
    expect(pastEnd.json().error.code).toBe('INVALID_ARGUMENT');
    const noJson = await h.request('POST', `/v1/projects/${project}/sync/objects/compose`, { payload: Buffer.from('not json'), headers: { 'content-type': 'application/octet-stream' } });
    expect(noJson.statusCode).toBe(422);

    const ok = await compose([{ hash: editedHash, parts }], Buffer.from('NEW BYTES'));
    expect(ok.statusCode, ok.body).toBe(200);
    expect(ok.json()).toEqual({ stored: 1, bytes: edited.length, literalBytes: 9 });
    expect(await missing(project, [editedHash])).toEqual([]);
  });
});

describe('sync objects on a server of several organizations', () => {
  it("does not tell, by an upload's answer, that another organization stores the same bytes", async () => {
    // The store is shared and deduplicated: an answer from the store's view ("already there") would
    // let any organization confirm whether another one holds a file it can guess.
    const g = await openHarness();
    try {
      const theirs = await g.createOrganization('theirs');
      const theirProject = await g.createProject('their-thesis', theirs.apiKey);
      const mine = await g.createProject('thesis');
      const put = (projectId: string, hash: string, payload: Buffer | string, key?: string) =>
        g.request('PUT', `/v1/projects/${projectId}/sync/objects/${hash}`, {
          payload: Buffer.from(payload),
          headers: { 'content-type': 'application/octet-stream' },
          ...(key ? { key } : {}),
        });
      const text = 'salary review 2026: 118,000\n';
      const hash = hashOf(text);
      expect((await put(theirProject, hash, text, theirs.apiKey)).statusCode).toBe(201);
      expect(await g.local.store.has(hash)).toBe(true);

      const first = await put(mine, hash, text);
      expect(first.statusCode).toBe(201);
      expect(first.json()).toEqual({ contentHash: hash, size: Buffer.byteLength(text), created: true });
      // Now it is this project's: a retry is the no-op answer.
      const again = await put(mine, hash, text);
      expect(again.statusCode).toBe(200);
      expect(again.json()).toMatchObject({ created: false });

      // A dataset sent whole: its shards are new to this project, whoever else stored them.
      const bytes = randomBytes(8 * 1024 * 1024);
      const scratch = await mkdtemp(join(tmpdir(), 'strata-sync-dataset-'));
      let manifest: Buffer;
      try {
        await writeFile(join(scratch, 'run.bin'), bytes);
        const cut = await chunkFile(join(scratch, 'run.bin'), DEFAULT_CHUNKER_PARAMS);
        const shards = cut.chunks.map((c) => ({ hash: c.hash, size: c.size }));
        manifest = encodeManifest({ format: MANIFEST_FORMAT, chunker: DEFAULT_CHUNKER_PARAMS, size: cut.size, hash: cut.hash, shards });
      } finally {
        await rm(scratch, { recursive: true, force: true });
      }
      const manifestHash = hashBuffer(manifest);
      const shardCount = new Set((JSON.parse(manifest.toString()) as { shards: Array<{ hash: string }> }).shards.map((s) => s.hash)).size;
      const sendWhole = (projectId: string, key?: string) =>
        g.request('PUT', `/v1/projects/${projectId}/sync/datasets/${manifestHash}`, {
          payload: bytes,
          headers: { 'content-type': 'application/octet-stream' },
          ...(key ? { key } : {}),
        });
      expect((await put(theirProject, manifestHash, manifest, theirs.apiKey)).statusCode).toBe(201);
      expect((await sendWhole(theirProject, theirs.apiKey)).json()).toMatchObject({ shards: shardCount, newShards: shardCount });

      expect((await put(mine, manifestHash, manifest)).statusCode).toBe(201);
      const whole = await sendWhole(mine);
      expect(whole.statusCode, whole.body).toBe(200);
      expect(whole.json()).toMatchObject({ size: bytes.length, shards: shardCount, newShards: shardCount });
    } finally {
      await g.dispose();
    }
  });
});
