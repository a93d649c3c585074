// The S3 content store against a real S3 server (s3rver in a child process, over HTTP on loopback):
// the shared ContentStore conformance suite, then what is particular to S3.
import { once } from 'node:events';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ListMultipartUploadsCommand, ListObjectsV2Command, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { chunkerParams } from '../engine/datasets/chunker-params.js';
import { StrataError } from '../engine/errors.js';
import { hashBuffer } from '../engine/hash.js';
import type { ContentStore } from '../engine/ports/content-store.js';
import { openS3ContentStore, parseObjectsUrl, type S3ContentStoreOptions } from '../engine/storage/s3-content-store.js';
import { credentialsFromEnv, objectKey } from '../engine/storage/s3-content-store-config.js';
import { contentStoreConformance } from './conformance/content-store.js';
import { bigBytes, bytes, chunked, collect, expectStrataError, listAll, streamError } from './conformance/content-store-fixtures.js';
import { waitFor } from './daemon-harness.js';
import { type S3Server, startS3Server } from './helpers/s3-server.js';

const MIB = 1024 * 1024;
let server: S3Server;
let prefixes = 0;

beforeAll(async () => {
  server = await startS3Server();
});
afterAll(async () => {
  await server?.close();
});

/** A store on a fresh prefix of the test server's bucket. */
function storeOptions(extra: Partial<S3ContentStoreOptions> = {}): S3ContentStoreOptions {
  return {
    bucket: server.bucket,
    endpoint: server.endpoint,
    region: server.region,
    forcePathStyle: true,
    accessKeyId: server.accessKeyId,
    secretAccessKey: server.secretAccessKey,
    prefix: `t${++prefixes}-${process.pid}/`,
    ...extra,
  };
}

contentStoreConformance('s3', async () => {
  const store = await openS3ContentStore(storeOptions());
  return { store, cleanup: () => store.close() };
});

describe('s3 content store', () => {
  let store: ContentStore;
  let options: S3ContentStoreOptions;
  let client: S3Client;
  let scratch: string;

  beforeEach(async () => {
    options = storeOptions({ partSize: 5 * MIB });
    store = await openS3ContentStore(options);
    client = new S3Client({
      endpoint: server.endpoint,
      region: server.region,
      forcePathStyle: true,
      credentials: { accessKeyId: server.accessKeyId, secretAccessKey: server.secretAccessKey },
      requestChecksumCalculation: 'WHEN_REQUIRED',
    });
    scratch = await mkdtemp(join(tmpdir(), 'strata-s3-test-'));
  });
  afterEach(async () => {
    await store.close();
    client.destroy();
    await rm(scratch, { recursive: true, force: true });
  });

  const keysUnder = async (sub: string) => {
    const page = await client.send(new ListObjectsV2Command({ Bucket: server.bucket, Prefix: `${options.prefix}${sub}` }));
    return (page.Contents ?? []).map((c) => c.Key!);
  };
  const pendingUploads = async () => {
    const page = await client.send(new ListMultipartUploadsCommand({ Bucket: server.bucket, Prefix: options.prefix }));
    return page.Uploads ?? [];
  };

  it('round-trips objects of several parts, through a temporary key and straight to the final key', async () => {
    const data = bigBytes(12 * MIB + 123, 5); // three 5 MiB parts, the last one short
    const result = await store.put(chunked(data, MIB));
    expect(result).toEqual({ hash: hashBuffer(data), size: data.length, created: true });
    expect(await collect(await store.open(result.hash))).toEqual(data);
    expect(await store.verify(result.hash)).toBe('ok');
    expect(await store.stat(result.hash)).toMatchObject({ size: data.length });
    // With the hash known up front (a sync upload), and from a file (hashed first, then uploaded).
    const other = bigBytes(11 * MIB, 6);
    const expected = await store.put(chunked(other, 3 * MIB + 7), { expectedHash: hashBuffer(other) });
    expect(expected).toEqual({ hash: hashBuffer(other), size: other.length, created: true });
    const file = join(scratch, 'third.bin');
    const third = bigBytes(16 * MIB, 7);
    await writeFile(file, third);
    expect(await store.putFile(file)).toMatchObject({ hash: hashBuffer(third), created: true });
    for (const content of [other, third]) expect(await collect(await store.open(hashBuffer(content)))).toEqual(content);
    expect(await store.putBuffer(other)).toMatchObject({ created: false });
    expect(await keysUnder('tmp/')).toEqual([]);
    expect(await pendingUploads()).toEqual([]);
    expect((await listAll(store)).size).toBe(3);
  });

  it('a wrong expectedHash or a failing source on a multipart upload leaves no object and no pending upload', async () => {
    const data = bigBytes(13 * MIB, 8);
    const wrong = hashBuffer(Buffer.from('something else'));
    await expectStrataError(store.put(chunked(data, MIB), { expectedHash: wrong }), 'CONTENT_CORRUPT', /expected/);
    expect(await store.has(wrong)).toBe(false);
    const boom = new Error('the client went away');
    async function* failing(): AsyncGenerator<Uint8Array> {
      yield* chunked(data, MIB);
      throw boom;
    }
    await expect(store.put(failing())).rejects.toBe(boom);
    await expect(store.put(failing(), { expectedHash: hashBuffer(data) })).rejects.toBe(boom);
    await expectStrataError(store.put(chunked(data, MIB), { maxBytes: 11 * MIB }), 'BODY_TOO_LARGE');
    expect(await pendingUploads()).toEqual([]);
    expect(await keysUnder('')).toEqual([]);
  });

  it('a dedup put refreshes touchedAtMs (object and marker), small and multipart', async () => {
    for (const data of [bytes(1000, 1), bigBytes(11 * MIB, 2)]) {
      const first = await store.put(chunked(data, MIB));
      const before = (await store.stat(first.hash))!;
      await waitFor('the clock to move', () => (Date.now() > before.touchedAtMs + 1 ? true : undefined));
      expect(await store.put(chunked(data, MIB))).toEqual({ ...first, created: false });
      const after = (await store.stat(first.hash))!;
      expect(after.touchedAtMs).toBeGreaterThan(before.touchedAtMs);
      expect(after.size).toBe(data.length);
    }
    // list() merges the markers in: every object once, a marker never as an object of its own
    expect((await listAll(store)).size).toBe(2);
    expect(await keysUnder('touched/')).toHaveLength(2);
  });

  it('fails a whole read of a corrupted object with CONTENT_CORRUPT; ranges are served unverified', async () => {
    const data = bigBytes(3_000_000, 3);
    const { hash } = await store.putBuffer(data);
    const damaged = Buffer.from(data);
    damaged[1_500_000] = damaged[1_500_000]! ^ 0xff;
    await client.send(new PutObjectCommand({ Bucket: server.bucket, Key: objectKey({ prefix: options.prefix! }, hash), Body: damaged }));
    const error = await streamError(await store.open(hash));
    expect(error).toBeInstanceOf(StrataError);
    expect((error as StrataError).code).toBe('CONTENT_CORRUPT');
    expect((error as StrataError).message).toContain(hash);
    await expectStrataError(store.readBuffer(hash), 'CONTENT_CORRUPT');
    await expectStrataError(store.readBuffers!([hash]), 'CONTENT_CORRUPT');
    expect(await store.verify(hash)).toBe('corrupt');
    expect((await collect(await store.open(hash, { start: 1_500_000, end: 1_500_000 })))[0]).toBe(damaged[1_500_000]);
    // Dedup trusts S3 and does not re-read it: delete, then put again, heals.
    await store.delete(hash);
    expect(await store.putBuffer(data)).toEqual({ hash, size: data.length, created: true });
    expect(await store.verify(hash)).toBe('ok');
  });

  it('stores datasets as shard objects, from a file and from a stream', async () => {
    const data = Buffer.concat([bigBytes(6 * MIB, 9), bytes(3000, 10)]);
    const file = join(scratch, 'dataset.bin');
    await writeFile(file, data);
    const params = chunkerParams({ minSize: 256 * 1024, avgSize: 1024 * 1024, maxSize: 4 * 1024 * 1024 });
    const fromFile = await store.putDatasetFile!(file, params);
    expect(fromFile.hash).toBe(hashBuffer(data));
    expect(fromFile.newShards).toBe(new Set(fromFile.shards.map((s) => s.hash)).size);
    let offset = 0;
    for (const shard of fromFile.shards) {
      expect(await store.readBuffer(shard.hash)).toEqual(data.subarray(offset, offset + shard.size));
      offset += shard.size;
    }
    const fromStream = await store.putDatasetStream!(chunked(data, 100_000), params);
    expect(fromStream).toMatchObject({ hash: fromFile.hash, shards: fromFile.shards, newShards: 0, newBytes: 0 });
    const edited = Buffer.concat([bytes(5000, 11), data]);
    const again = await store.putDatasetStream!(chunked(edited, 65_536), params);
    expect(again.newShards).toBeGreaterThan(0);
    expect(again.newShards).toBeLessThan(again.shards.length);
    for (const shard of again.shards) expect(await store.verify(shard.hash)).toBe('ok');
    await expectStrataError(store.putDatasetStream!(chunked(data, MIB), params, { maxBytes: MIB }), 'BODY_TOO_LARGE');
  });

  it('lists more objects than one listing page holds (1,000 keys), each once, with its marker merged', async () => {
    const datas = Array.from({ length: 1100 }, (_, i) => Buffer.from(`object ${i}`));
    const stored = await store.putBuffers(datas);
    // Dedup puts write markers: the merge of the two paged listings must still give each object once.
    await store.putBuffers(datas.slice(0, 50));
    const listed: string[] = [];
    for await (const object of store.list()) listed.push(object.hash);
    expect(listed).toHaveLength(1100);
    expect(new Set(listed)).toStrictEqual(new Set(stored.map((r) => r.hash)));
    expect([...listed].sort()).toStrictEqual(listed);
  }, 120_000);

  it('refuses calls after close with SHUTTING_DOWN', async () => {
    const { hash } = await store.putBuffer(bytes(10, 1));
    await store.close();
    await expectStrataError(store.has(hash), 'SHUTTING_DOWN');
    await expectStrataError(store.putBuffer(bytes(10, 2)), 'SHUTTING_DOWN');
  });
});

describe('s3 objects URL and opening', () => {
  it('parses s3:// URLs: bucket, prefix, endpoint options, userinfo credentials', () => {
    expect(parseObjectsUrl('s3://my-bucket/some/prefix?endpoint=http://127.0.0.1:9000&region=eu-west-1&forcePathStyle=true&partSize=8388608')).toEqual({
      bucket: 'my-bucket',
      prefix: 'some/prefix',
      endpoint: 'http://127.0.0.1:9000',
      region: 'eu-west-1',
      forcePathStyle: true,
      partSize: 8 * MIB,
    });
    expect(parseObjectsUrl('s3://b')).toEqual({ bucket: 'b' });
    expect(parseObjectsUrl('s3://b/?forcePathStyle=false')).toEqual({ bucket: 'b', forcePathStyle: false });
    expect(parseObjectsUrl('s3://AKID:se%2Fcret@b/p/')).toEqual({ bucket: 'b', prefix: 'p/', accessKeyId: 'AKID', secretAccessKey: 'se/cret' });
  });

  it('refuses bad URLs without quoting them (they may hold secrets)', () => {
    const cases: Array<[string, RegExp]> = [
      ['https://bucket/prefix', /s3:\/\//],
      ['s3:///prefix', /bucket/],
      ['s3://b?secretAccessKey=hunter2-topsecret', /environment/],
      ['s3://b?AWS_SECRET_ACCESS_KEY=hunter2-topsecret', /environment/],
      ['s3://b?colour=blue', /unknown query parameter "colour"/],
      ['s3://b?forcePathStyle=maybe', /forcePathStyle/],
      ['s3://AKID:hunter2-topsecret@bad host', /not a valid URL/],
      ['s3://AKID:@b', /half a credential/],
    ];
    for (const [url, message] of cases) {
      let caught: unknown;
      try {
        parseObjectsUrl(url);
      } catch (error) {
        caught = error;
      }
      expect(caught, url).toBeInstanceOf(StrataError);
      expect((caught as StrataError).code).toBe('INVALID_ARGUMENT');
      expect((caught as StrataError).message).toMatch(message);
      expect((caught as StrataError).message).not.toContain('hunter2');
    }
  });

  it('reads credentials from the environment, or from *_FILE paths', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'strata-s3-creds-'));
    try {
      await writeFile(join(dir, 'id'), 'AKIDFROMFILE\n');
      await writeFile(join(dir, 'secret'), 'secret-from-file\n');
      expect(await credentialsFromEnv({ AWS_ACCESS_KEY_ID_FILE: join(dir, 'id'), AWS_SECRET_ACCESS_KEY_FILE: join(dir, 'secret') })).toEqual({
        accessKeyId: 'AKIDFROMFILE',
        secretAccessKey: 'secret-from-file',
      });
      expect(await credentialsFromEnv({ AWS_ACCESS_KEY_ID: 'A', AWS_SECRET_ACCESS_KEY: 'S', AWS_SESSION_TOKEN: 'T' })).toEqual({ accessKeyId: 'A', secretAccessKey: 'S', sessionToken: 'T' });
      expect(await credentialsFromEnv({})).toBeNull();
      await expectStrataError((async () => credentialsFromEnv({ AWS_ACCESS_KEY_ID: 'A' }))(), 'INVALID_ARGUMENT', /both/);
      const absent = { AWS_ACCESS_KEY_ID: 'A', AWS_SECRET_ACCESS_KEY_FILE: join(dir, 'absent') };
      const error = await expectStrataError((async () => credentialsFromEnv(absent))(), 'INVALID_ARGUMENT');
      expect(error.message).toContain('ENOENT');
      // parseObjectsUrl(url, env) takes them from there; userinfo wins
      const env = { AWS_ACCESS_KEY_ID: 'AKIDENV', AWS_SECRET_ACCESS_KEY_FILE: join(dir, 'secret') };
      expect(parseObjectsUrl('s3://b', env)).toEqual({ bucket: 'b', accessKeyId: 'AKIDENV', secretAccessKey: 'secret-from-file' });
      expect(parseObjectsUrl('s3://U:P@b', env)).toEqual({ bucket: 'b', accessKeyId: 'U', secretAccessKey: 'P' });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('opens from a URL with userinfo credentials', async () => {
    const url = server.url.replace('s3://', `s3://${server.accessKeyId}:${encodeURIComponent(server.secretAccessKey)}@`).replace('?', '/from-url?');
    const store = await openS3ContentStore(parseObjectsUrl(url));
    try {
      const { hash } = await store.putBuffer(Buffer.from('abc'));
      expect((await store.readBuffer(hash)).toString()).toBe('abc');
    } finally {
      await store.close();
    }
  });

  it('fails open with STORAGE_ERROR naming bucket and endpoint, never the secret', async () => {
    const probe = createServer();
    probe.listen(0, '127.0.0.1');
    await once(probe, 'listening');
    const { port } = probe.address() as { port: number };
    probe.close();
    await once(probe, 'close');
    const secret = 'n0t-for-any-message-0123456789';
    const attempts: Array<[S3ContentStoreOptions, RegExp]> = [
      [{ bucket: 'nowhere', endpoint: `http://127.0.0.1:${port}`, region: 'us-east-1', accessKeyId: 'AKIDEXAMPLE', secretAccessKey: secret }, /ECONNREFUSED/],
      // s3rver checks that a SigV4 access key exists, not the signature: an unknown key gets the 403
      // (a HEAD error has no body, so no S3 error code either)
      [{ bucket: server.bucket, endpoint: server.endpoint, region: 'us-east-1', accessKeyId: 'AKIDUNKNOWN', secretAccessKey: secret }, /HTTP 403/],
      [{ bucket: 'no-such-bucket', endpoint: server.endpoint, region: 'us-east-1', accessKeyId: server.accessKeyId, secretAccessKey: server.secretAccessKey }, /NotFound \(HTTP 404\)/],
    ];
    for (const [attempt, reason] of attempts) {
      const error = await expectStrataError(openS3ContentStore(attempt), 'STORAGE_ERROR', reason);
      expect(error.message).toContain(`"${attempt.bucket}"`);
      expect(error.message).toContain(attempt.endpoint);
      expect(error.message).not.toContain(secret);
      expect(error.message).not.toContain(server.secretAccessKey);
      expect(JSON.stringify(error.details)).not.toContain(secret);
    }
  });
});
