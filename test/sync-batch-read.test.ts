// The batch download (issue 38, item 6): a workstation pulling a project fetched every file with its
// own request (23,000 for 5,000 files). POST sync/objects/read answers many small contents in one
// streamed body, framed like the batch upload, and is authorized exactly like the single read: read
// access to the project, and every hash must be one the project references or was sent — a hash
// another project (or organization) stores is refused, and nothing of the batch is sent.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashBuffer } from '../engine/hash.js';
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

const hashOf = (bytes: string | Buffer) => hashBuffer(typeof bytes === 'string' ? Buffer.from(bytes) : bytes);
const readBatch = (projectId: string, hashes: string[], key?: string) =>
  h.request('POST', `/v1/projects/${projectId}/sync/objects/read`, { body: { hashes }, ...(key ? { key } : {}) });

/** The frames of an answer, parsed the strict way (every byte accounted for). */
function parseFrames(body: Buffer): Array<{ hash: string; data: Buffer }> {
  const out: Array<{ hash: string; data: Buffer }> = [];
  let at = 0;
  while (at < body.length) {
    const newline = body.indexOf(10, at);
    const [hash, size] = body.subarray(at, newline).toString('latin1').split(' ');
    const end = newline + 1 + Number(size);
    out.push({ hash: hash!, data: body.subarray(newline + 1, end) });
    at = end;
  }
  expect(at).toBe(body.length);
  return out;
}

describe('sync batch read', () => {
  it('answers many contents in one body, in the order asked, each its exact bytes', async () => {
    const files: Record<string, Buffer> = { 'a.m': Buffer.from('a\n'), 'b/c.py': Buffer.alloc(70_000, 7), 'empty.txt': Buffer.alloc(0) };
    for (const [path, bytes] of Object.entries(files)) {
      await h.ok('PUT', `/v1/projects/${project}/fs/write?path=${encodeURIComponent(path)}`, { body: bytes.toString('latin1'), status: 201 });
    }
    const hashes = Object.values(files).map(hashOf).reverse();
    const response = await readBatch(project, [...hashes, hashes[0]!]);
    expect(response.statusCode, response.body).toBe(200);
    expect(response.headers['content-type']).toBe('application/octet-stream');
    expect(Number(response.headers['content-length'])).toBe(response.rawPayload.length);
    const frames = parseFrames(response.rawPayload);
    expect(frames.map((f) => f.hash)).toEqual([...hashes, hashes[0]]);
    for (const frame of frames) expect(hashOf(frame.data)).toBe(frame.hash);
  });

  it("refuses a hash the project does not have, even one another project stores; nothing is sent", async () => {
    await h.ok('PUT', `/v1/projects/${other}/fs/write?path=secret.txt`, { body: 'the other project\n', status: 201 });
    await h.ok('PUT', `/v1/projects/${project}/fs/write?path=mine.txt`, { body: 'mine\n', status: 201 });
    const secret = hashOf('the other project\n');
    expect(await h.local.store.has(secret)).toBe(true);
    const response = await readBatch(project, [hashOf('mine\n'), secret]);
    expect(response.statusCode).toBe(404);
    expect(response.json()).toMatchObject({ error: { code: 'CONTENT_NOT_FOUND', details: { hash: secret, index: 1 } } });
    expect(response.body).not.toContain('the other project');
    // Its own project reads it.
    expect(parseFrames((await readBatch(other, [secret])).rawPayload)[0]!.data.toString()).toBe('the other project\n');
    // Another organization's owner does not see the project at all.
    const org = await h.createOrganization('elsewhere');
    expect((await readBatch(project, [hashOf('mine\n')], org.apiKey)).statusCode).toBe(404);
  });

  it('is authorized like the single read: a viewer may, a key scoped to another project may not', async () => {
    await h.ok('PUT', `/v1/projects/${project}/fs/write?path=shared.txt`, { body: 'shared\n', status: 201 });
    const hash = hashOf('shared\n');
    const viewer = await h.createKey({ purpose: 'viewer', role: 'viewer' });
    const single = await h.request('GET', `/v1/projects/${project}/sync/objects/${hash}`, { key: viewer.apiKey });
    const batch = await readBatch(project, [hash], viewer.apiKey);
    expect(single.statusCode).toBe(200);
    expect(batch.statusCode).toBe(200);
    const scoped = await h.createKey({ purpose: 'other project', role: 'member', projectId: other });
    const singleScoped = await h.request('GET', `/v1/projects/${project}/sync/objects/${hash}`, { key: scoped.apiKey });
    const batchScoped = await readBatch(project, [hash], scoped.apiKey);
    expect(batchScoped.statusCode).toBe(singleScoped.statusCode);
    expect(batchScoped.json().error.code).toBe(singleScoped.json().error.code);
    expect((await h.request('POST', `/v1/projects/${project}/sync/objects/read`, { body: { hashes: [hash] }, key: null })).statusCode).toBe(401);
  });

  it('bad input is a coded 4xx: a malformed hash, too many, none, more bytes than a batch carries', async () => {
    const bad = await readBatch(project, ['sha1:abc']);
    expect(bad.statusCode).toBe(422);
    expect(bad.json()).toMatchObject({ error: { code: 'INVALID_ARGUMENT', details: { field: 'hashes[0]' } } });
    const many = await readBatch(project, Array.from({ length: 1_001 }, (_, i) => hashOf(String(i))));
    expect(many.statusCode).toBeGreaterThanOrEqual(400);
    expect(many.statusCode).toBeLessThan(500);
    const none = await readBatch(project, []);
    expect(none.statusCode).toBe(400);
    expect(none.json().error.code).toBe('INVALID_BODY');
    // 65 × 1 MiB of one content asked for: past the 64 MiB a batch carries.
    const big = Buffer.alloc(1024 * 1024, 1);
    await h.ok('PUT', `/v1/projects/${project}/fs/write?path=big.bin`, { body: big.toString('latin1'), status: 201 });
    const tooMuch = await readBatch(project, Array.from({ length: 65 }, () => hashOf(big)));
    expect(tooMuch.statusCode).toBe(422);
    expect(tooMuch.json()).toMatchObject({ error: { code: 'BATCH_TOO_LARGE', details: { maxBytes: 64 * 1024 * 1024, index: 64 } } });
  });
});
