// Content by hash for sync (issue 14): which of a workstation's contents the project lacks, and the
// upload of one, verified against its hash. Both need write access: they are the first half of a push.
import { Readable } from 'node:stream';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { authorizeProject } from '../../engine/access/authorize.js';
import { actorOf } from '../../engine/access/context.js';
import { type ComposedObject, MAX_BATCH_BYTES, MAX_BATCH_OBJECTS, MAX_HASHES_PER_QUERY, MAX_READ_BATCH_OBJECTS } from '../../engine/commands/sync-objects.js';
import { MAX_SNAPSHOT_PINS } from '../../engine/commands/sync-snapshots.js';
import { MAX_SYNCED_VERSIONS } from '../../engine/commands/sync-versions.js';
import { StrataError } from '../../engine/errors.js';
import { principalOf } from '../request-context.js';
import type { App, RouteDeps } from '../route-deps.js';
import { SnapshotSchema } from '../resource-schemas.js';
import { Id } from '../schemas.js';
import { isAsyncIterable } from './files.js';

const tags = ['sync'];
const closed = { additionalProperties: false } as const;
// Shape only; the engine checks each hash and names a bad one.
const Hash = Type.String({ minLength: 1, maxLength: 80 });
const ObjectParams = Type.Object({ projectId: Id, hash: Hash }, closed);
const MissingBody = Type.Object({ hashes: Type.Array(Hash, { maxItems: MAX_HASHES_PER_QUERY }) }, closed);
const MissingResponse = Type.Object({ missing: Type.Array(Type.String()) });
const UploadResponse = Type.Object({ contentHash: Type.String(), size: Type.Integer(), created: Type.Boolean() });
// Shapes only; the engine checks ids, hashes, paths and times and names the field at fault.
const SyncedVersion = Type.Object(
  {
    versionId: Type.String({ maxLength: 64 }),
    path: Type.String({ maxLength: 4096 }),
    baseVersionId: Type.Union([Type.String({ maxLength: 64 }), Type.Null()]),
    contentHash: Type.Union([Hash, Type.Null()]),
    executable: Type.Optional(Type.Boolean()),
    symlink: Type.Optional(Type.Boolean()),
    dataset: Type.Optional(Type.Boolean()),
    timestamp: Type.String({ maxLength: 40 }),
  },
  closed,
);
const ChangesQuery = Type.Object(
  {
    cursor: Type.Optional(Type.String({ maxLength: 32 })),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000 })),
    waitMs: Type.Optional(Type.Integer({ minimum: 0, maximum: 30_000 })),
  },
  closed,
);
const ChangesResponse = Type.Object({ items: Type.Array(Type.Object({}, { additionalProperties: true })), cursor: Type.String(), more: Type.Boolean() });
const SnapshotBody = Type.Object(
  {
    snapshotId: Type.String({ maxLength: 64 }),
    message: Type.String({ maxLength: 10_000 }),
    timestamp: Type.String({ maxLength: 40 }),
    entries: Type.Array(Type.Object({ path: Type.String({ maxLength: 4096 }), versionId: Type.String({ maxLength: 64 }) }, closed), { maxItems: MAX_SNAPSHOT_PINS }),
    partial: Type.Optional(Type.Boolean()),
  },
  closed,
);
const SnapshotOutcome = Type.Object({ result: Type.String(), snapshot: SnapshotSchema, missing: Type.Optional(Type.Array(Type.String())) });
const SnapshotFeedQuery = Type.Object(
  { afterSeq: Type.Optional(Type.Integer({ minimum: 0 })), limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000 })) },
  closed,
);
const SNAPSHOT_BODY_LIMIT = 128 * 1024 * 1024;
const VersionsBody = Type.Object({ workstation: Type.String({ maxLength: 64 }), versions: Type.Array(SyncedVersion, { maxItems: MAX_SYNCED_VERSIONS }) }, closed);
const VersionsResponse = Type.Object({ results: Type.Array(Type.Object({ versionId: Type.String(), result: Type.String(), path: Type.String() }, { additionalProperties: true })) });

export function registerSyncRoutes(app: App, deps: RouteDeps): void {
  const { engine, access, maxUploadBytes } = deps;
  // Long polls waiting now. Closing wakes them: each answers at once, as its timeout would (an empty
  // page, the cursor unchanged), so the server drains. Left waiting, a workstation's 25 s poll
  // outlasted `strata serve`'s 10 s stop timeout and a SIGTERM exited 1 ("stop timed out").
  const waiting = new Set<() => void>();
  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
    for (const wake of [...waiting]) wake();
  });

  app.post(
    '/v1/projects/:projectId/sync/objects/missing',
    {
      schema: { params: Type.Object({ projectId: Id }, closed), body: MissingBody },
      config: { doc: { summary: 'Of these content hashes, those the project neither references nor was sent', tags, response: MissingResponse } },
    },
    async (request) => {
      const { project } = await authorizeProject(access, principalOf(request), request.params.projectId, 'write');
      return { missing: await engine.missingObjects({ projectId: project.projectId, hashes: request.body.hashes }) };
    },
  );

  app.post(
    '/v1/projects/:projectId/sync/versions',
    {
      schema: { params: Type.Object({ projectId: Id }, closed), body: VersionsBody },
      config: { doc: { summary: 'Apply versions a workstation made (idempotent by version id; conflicts become conflict copies)', tags, response: VersionsResponse } },
    },
    async (request) => {
      const principal = principalOf(request);
      const { project } = await authorizeProject(access, principal, request.params.projectId, 'write');
      const { workstation, versions } = request.body;
      return { results: await engine.applySyncedVersions({ projectId: project.projectId, actor: actorOf(principal), workstation, versions }) };
    },
  );

  // A pulling workstation fetches a dataset's manifest and the shards it lacks one by one (the rest
  // it has): only changed shards cross the network. Read access, like fs/read.
  app.get(
    '/v1/projects/:projectId/sync/objects/:hash',
    {
      schema: { params: ObjectParams },
      config: { doc: { summary: 'Download content the project has, by hash (verified as it streams)', tags, produces: 'application/octet-stream' } },
    },
    async (request, reply) => {
      const { project } = await authorizeProject(access, principalOf(request), request.params.projectId, 'read');
      const { stream, size } = await engine.openObject({ projectId: project.projectId, hash: request.params.hash });
      return reply.header('content-type', 'application/octet-stream').header('content-length', size).send(stream);
    },
  );

  // The batch download (issue 38): a clone of 5,000 small files cost 5,000 `fs/read` requests, each a
  // round trip through both event loops. Many small contents in one answer, framed as the batch
  // upload is (`<hash> <size>\n<bytes>`), each object opened and streamed only when its turn comes, so
  // the answer is never held in memory (at most 64 MiB are asked for; large files keep streaming on
  // their own). Authorized as `GET sync/objects/{hash}` is, for every hash: read access to this
  // project, and a hash the project neither references nor was sent refuses the whole request.
  app.post(
    '/v1/projects/:projectId/sync/objects/read',
    {
      schema: { params: Type.Object({ projectId: Id }, closed), body: Type.Object({ hashes: Type.Array(Hash, { minItems: 1, maxItems: MAX_READ_BATCH_OBJECTS }) }, closed) },
      config: {
        doc: {
          summary: 'Download many small contents the project has in one streamed answer: frames of `<hash> <size>\\n<bytes>`, in the order asked',
          tags,
          produces: 'application/octet-stream',
        },
      },
    },
    async (request, reply) => {
      const { project } = await authorizeProject(access, principalOf(request), request.params.projectId, 'read');
      const objects = await engine.objectsToRead({ projectId: project.projectId, hashes: request.body.hashes });
      const length = objects.reduce((sum, o) => sum + Buffer.byteLength(`${o.hash} ${o.size}\n`) + o.size, 0);
      const open = (hash: string) => engine.openObject({ projectId: project.projectId, hash });
      return reply.header('content-type', 'application/octet-stream').header('content-length', length).send(Readable.from(frames(objects, open)));
    },
  );

  // A workstation's snapshot lands as the next of the server's chain, pinning that workstation's tree.
  // A big project's pins are a big body (about 80 bytes a file): the limit is raised for this route.
  app.post(
    '/v1/projects/:projectId/sync/snapshots',
    {
      bodyLimit: SNAPSHOT_BODY_LIMIT,
      schema: { params: Type.Object({ projectId: Id }, closed), body: SnapshotBody },
      config: {
        doc: { summary: "Record a workstation's snapshot (its own id, time, message and pins) as the next of the chain; idempotent by id", tags, response: SnapshotOutcome },
      },
    },
    async (request) => {
      const principal = principalOf(request);
      const { project } = await authorizeProject(access, principal, request.params.projectId, 'write');
      return engine.recordSyncedSnapshot({ projectId: project.projectId, actor: actorOf(principal), snapshot: request.body });
    },
  );

  app.get(
    '/v1/projects/:projectId/sync/snapshots',
    {
      schema: { params: Type.Object({ projectId: Id }, closed), querystring: SnapshotFeedQuery },
      config: { doc: { summary: 'The snapshot chain after a position (seq), oldest first', tags, response: Type.Object({ items: Type.Array(SnapshotSchema), more: Type.Boolean() }) } },
    },
    async (request) => {
      const { project } = await authorizeProject(access, principalOf(request), request.params.projectId, 'read');
      return engine.snapshotFeed({ projectId: project.projectId, afterSeq: request.query.afterSeq ?? 0, limit: request.query.limit ?? 100 });
    },
  );

  // Long poll: with nothing new, the answer waits (up to waitMs) for the engine to announce a change
  // of the project, so another workstation's save arrives within a moment, without polling.
  app.get(
    '/v1/projects/:projectId/sync/changes',
    {
      schema: { params: Type.Object({ projectId: Id }, closed), querystring: ChangesQuery },
      config: { doc: { summary: "The project's versions in commit order after a cursor (long poll with waitMs)", tags, response: ChangesResponse } },
    },
    async (request) => {
      const { project } = await authorizeProject(access, principalOf(request), request.params.projectId, 'read');
      const { cursor, limit, waitMs } = request.query;
      const query = { projectId: project.projectId, ...(cursor === undefined ? {} : { cursor }), ...(limit === undefined ? {} : { limit }) };
      const page = await engine.syncChanges(query);
      if (page.items.length > 0 || !waitMs || closing) return page;
      await changeOrTimeout(project.projectId, waitMs, request.raw);
      return engine.syncChanges(query);
    },
  );

  function changeOrTimeout(projectId: string, waitMs: number, raw: NodeJS.EventEmitter): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        unsubscribe();
        raw.off('close', done);
        waiting.delete(done);
        resolve();
      };
      const timer = setTimeout(done, waitMs);
      const unsubscribe = engine.onFilesChanged((changed) => {
        if (changed === projectId) done();
      });
      raw.once('close', done);
      waiting.add(done);
    });
  }

  // Raw bytes, streamed into the store (never buffered), as for fs/write.
  app.register(async (plugin) => {
    const child = plugin.withTypeProvider<TypeBoxTypeProvider>();
    child.removeAllContentTypeParsers();
    child.addContentTypeParser('*', (_request, payload, done) => done(null, payload));
    child.put(
      '/v1/projects/:projectId/sync/objects/:hash',
      {
        schema: { params: ObjectParams },
        config: {
          doc: {
            summary: 'Upload content by its hash (verified; a mismatch is 422 and stores nothing)',
            tags,
            status: 201,
            response: UploadResponse,
            consumes: 'application/octet-stream',
          },
        },
      },
      async (request, reply) => {
        const { project } = await authorizeProject(access, principalOf(request), request.params.projectId, 'write');
        const declared = Number(request.headers['content-length'] ?? 0);
        if (declared > maxUploadBytes) throw new StrataError('BODY_TOO_LARGE', { details: { maxBytes: maxUploadBytes } });
        const body: unknown = request.body;
        const content = isAsyncIterable(body) ? body : (async function* () {})();
        const result = await engine.putObject({ projectId: project.projectId, hash: request.params.hash, content, maxBytes: maxUploadBytes });
        return reply.code(result.created ? 201 : 200).send(result);
      },
    );

    // A dataset sent whole, its manifest sent before: cut on the server into the manifest's shards
    // (one pack, one fsync), instead of a request and a file per shard.
    child.put(
      '/v1/projects/:projectId/sync/datasets/:manifestHash',
      {
        schema: { params: Type.Object({ projectId: Id, manifestHash: Hash }, closed) },
        config: {
          doc: {
            summary: "Upload a dataset's assembled bytes; the server cuts them into its manifest's shards (what arrived whole counts even if cut off)",
            tags,
            response: Type.Object({ size: Type.Integer(), shards: Type.Integer(), newShards: Type.Integer() }),
            consumes: 'application/octet-stream',
          },
        },
      },
      async (request) => {
        const { project } = await authorizeProject(access, principalOf(request), request.params.projectId, 'write');
        const declared = Number(request.headers['content-length'] ?? 0);
        if (declared > maxUploadBytes) throw new StrataError('BODY_TOO_LARGE', { details: { maxBytes: maxUploadBytes } });
        const body: unknown = request.body;
        const content = isAsyncIterable(body) ? body : (async function* () {})();
        return engine.putDatasetContent({ projectId: project.projectId, manifestHash: request.params.manifestHash, content, maxBytes: maxUploadBytes });
      },
    );

    // Objects rebuilt from what the project has plus new bytes (the delta of an edited dataset): the
    // body is one line of JSON, `{"objects": [{hash, parts}]}`, then the literal bytes the parts name.
    child.post(
      '/v1/projects/:projectId/sync/objects/compose',
      {
        schema: { params: Type.Object({ projectId: Id }, closed) },
        config: {
          doc: {
            summary: 'Upload objects as copies of content the project has plus new bytes: a JSON line `{objects: [{hash, parts}]}`, then the literal bytes (each object verified)',
            tags,
            response: Type.Object({ stored: Type.Integer(), bytes: Type.Integer(), literalBytes: Type.Integer() }),
            consumes: 'application/octet-stream',
          },
        },
      },
      async (request) => {
        const { project } = await authorizeProject(access, principalOf(request), request.params.projectId, 'write');
        const body: unknown = request.body;
        const { header, rest } = await readHeaderAndBytes(isAsyncIterable(body) ? body : (async function* () {})());
        return engine.composeObjects({ projectId: project.projectId, objects: header.objects as ComposedObject[], literal: rest });
      },
    );

    // Small contents in one request (a project of thousands of small files would otherwise cost a
    // request each): frames of `<hash> <size>\n<bytes>`, at most 1,000 and 64 MiB in all.
    child.post(
      '/v1/projects/:projectId/sync/objects',
      {
        schema: { params: Type.Object({ projectId: Id }, closed) },
        config: {
          doc: {
            summary: 'Upload many small contents at once: frames of `<hash> <size>\\n<bytes>` (each verified; a mismatch is 422)',
            tags,
            response: Type.Object({ stored: Type.Integer(), bytes: Type.Integer() }),
            consumes: 'application/octet-stream',
          },
        },
      },
      async (request) => {
        const { project } = await authorizeProject(access, principalOf(request), request.params.projectId, 'write');
        const body: unknown = request.body;
        const objects = await readFrames(isAsyncIterable(body) ? body : (async function* () {})());
        return engine.putObjects({ projectId: project.projectId, objects });
      },
    );
  });
}

/**
 * The frames of a batch download, one object open at a time (the store verifies each against its hash
 * as it streams: a corrupt object cuts the answer short, and the client's count of bytes sees it).
 */
async function* frames(objects: Array<{ hash: string; size: number }>, open: (hash: string) => Promise<{ stream: Readable }>): AsyncGenerator<Buffer> {
  for (const { hash, size } of objects) {
    yield Buffer.from(`${hash} ${size}\n`, 'latin1');
    const { stream } = await open(hash);
    try {
      for await (const chunk of stream) yield chunk as Buffer;
    } finally {
      stream.destroy();
    }
  }
}

/** A JSON line and the bytes after it (compose), at most MAX_BATCH_BYTES of bytes. */
async function readHeaderAndBytes(body: AsyncIterable<Uint8Array>): Promise<{ header: { objects?: unknown }; rest: Uint8Array }> {
  const pieces: Buffer[] = [];
  let total = 0;
  for await (const chunk of body) {
    total += chunk.length;
    if (total > MAX_BATCH_BYTES + 1024 * 1024) throw new StrataError('BODY_TOO_LARGE', { details: { maxBytes: MAX_BATCH_BYTES } });
    pieces.push(Buffer.from(chunk));
  }
  const all = Buffer.concat(pieces);
  const newline = all.indexOf(10);
  const malformed = (why: string) => new StrataError('INVALID_ARGUMENT', { message: `malformed compose body: ${why}`, details: { field: 'body' } });
  if (newline === -1) throw malformed('no JSON line');
  let header: unknown;
  try {
    header = JSON.parse(all.subarray(0, newline).toString('utf8'));
  } catch {
    throw malformed('the first line is not JSON');
  }
  if (header === null || typeof header !== 'object' || !Array.isArray((header as { objects?: unknown }).objects)) throw malformed('the JSON line has no `objects` array');
  return { header: header as { objects: unknown }, rest: all.subarray(newline + 1) };
}

/** Parses `<hash> <size>\n<bytes>` frames, refusing more than MAX_BATCH_OBJECTS or MAX_BATCH_BYTES. */
async function readFrames(body: AsyncIterable<Uint8Array>): Promise<Array<{ hash: string; data: Uint8Array }>> {
  const objects: Array<{ hash: string; data: Uint8Array }> = [];
  let pending = Buffer.alloc(0);
  let total = 0;
  const bad = (reason: string) => new StrataError('INVALID_ARGUMENT', { message: `malformed object batch: ${reason}`, details: { field: 'body', index: objects.length } });
  for await (const chunk of body) {
    total += chunk.length;
    if (total > MAX_BATCH_BYTES + MAX_BATCH_OBJECTS * 100) throw new StrataError('BODY_TOO_LARGE', { details: { maxBytes: MAX_BATCH_BYTES } });
    pending = pending.length === 0 ? Buffer.from(chunk) : Buffer.concat([pending, chunk]);
    for (;;) {
      const newline = pending.indexOf(10);
      if (newline === -1) {
        if (pending.length > 200) throw bad('a header longer than 200 bytes');
        break;
      }
      const header = /^(\S{1,100}) (\d{1,10})$/.exec(pending.subarray(0, newline).toString('latin1'));
      if (header === null) throw bad('a header is not `<hash> <size>`');
      const size = Number(header[2]);
      if (pending.length < newline + 1 + size) break;
      if (objects.length >= MAX_BATCH_OBJECTS) throw new StrataError('TOO_MANY_HASHES', { details: { max: MAX_BATCH_OBJECTS } });
      objects.push({ hash: header[1]!, data: Buffer.from(pending.subarray(newline + 1, newline + 1 + size)) });
      pending = pending.subarray(newline + 1 + size);
    }
  }
  if (pending.length > 0) throw bad('the body ends inside an object');
  return objects;
}
