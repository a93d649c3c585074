// Content by hash for sync (issue 14): which of a workstation's contents the project lacks, and the
// upload of one, verified against its hash. Both need write access: they are the first half of a push.
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { authorizeProject } from '../../engine/access/authorize.js';
import { actorOf } from '../../engine/access/context.js';
import { MAX_HASHES_PER_QUERY } from '../../engine/commands/sync-objects.js';
import { MAX_SYNCED_VERSIONS } from '../../engine/commands/sync-versions.js';
import { StrataError } from '../../engine/errors.js';
import { principalOf } from '../request-context.js';
import type { App, RouteDeps } from '../route-deps.js';
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
    timestamp: Type.String({ maxLength: 40 }),
  },
  closed,
);
const VersionsBody = Type.Object({ workstation: Type.String({ maxLength: 64 }), versions: Type.Array(SyncedVersion, { maxItems: MAX_SYNCED_VERSIONS }) }, closed);
const VersionsResponse = Type.Object({ results: Type.Array(Type.Object({ versionId: Type.String(), result: Type.String(), path: Type.String() }, { additionalProperties: true })) });

export function registerSyncRoutes(app: App, deps: RouteDeps): void {
  const { engine, access, maxUploadBytes } = deps;

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
  });
}
