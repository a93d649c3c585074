import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { authorizeProject } from '../../engine/access/authorize.js';
import { actorOf } from '../../engine/access/context.js';
import type { WriteInput } from '../../engine/engine-api.js';
import { StrataError } from '../../engine/errors.js';
import { normalizeDirectoryPath, normalizeProjectPath } from '../../engine/paths.js';
import { principalOf } from '../request-context.js';
import { DirectorySchema, EntrySchema, VersionSchema, WriteResultSchema } from '../resource-schemas.js';
import type { App, RouteDeps } from '../route-deps.js';
import { DeleteBody, DirQuery, PathQuery, ProjectParams, RenameBody, WriteQuery } from '../schemas.js';
import { registerFileReadRoute } from './files-read.js';

const tags = ['files'];

/** A raw upload body (the stream the pass-through parser hands on). */
export function isAsyncIterable(value: unknown): value is AsyncIterable<Uint8Array> {
  return typeof value === 'object' && value !== null && Symbol.asyncIterator in value;
}

export function registerFileRoutes(app: App, deps: RouteDeps): void {
  const { engine, access, maxUploadBytes } = deps;

  // Uploads live in their own plugin context: its only body parser passes the request stream through
  // untouched (any content type), so a multi-GB file streams into the store and is never buffered.
  // Everywhere else only JSON bodies are accepted.
  app.register(async (plugin) => {
    const child = plugin.withTypeProvider<TypeBoxTypeProvider>();
    child.removeAllContentTypeParsers();
    child.addContentTypeParser('*', (_request, payload, done) => done(null, payload));
    child.put(
      '/v1/projects/:projectId/fs/write',
      {
        schema: { params: ProjectParams, querystring: WriteQuery },
        config: {
          doc: { summary: 'Write a file (raw bytes)', tags, status: 201, response: WriteResultSchema, consumes: 'application/octet-stream' },
        },
      },
      async (request, reply) => {
        const principal = principalOf(request);
        const { project } = await authorizeProject(access, principal, request.params.projectId, 'write');
        const path = normalizeProjectPath(request.query.path, 'path');
        const declared = Number(request.headers['content-length'] ?? 0);
        if (declared > maxUploadBytes) throw new StrataError('BODY_TOO_LARGE', { details: { maxBytes: maxUploadBytes } });
        const body: unknown = request.body;
        const input: WriteInput = {
          projectId: project.projectId,
          project,
          path,
          actor: actorOf(principal),
          content: isAsyncIterable(body) ? body : new Uint8Array(0),
          maxBytes: maxUploadBytes,
        };
        // Lets a large upload that is a dataset go straight to shards (no whole copy first).
        if (declared > 0) input.sizeHint = declared;
        const base = request.query.baseVersionId;
        if (base !== undefined) input.baseVersionId = base === '' ? null : base;
        if (request.query.executable === true) input.executable = true;
        if (request.query.symlink === true) input.symlink = true;
        return reply.code(201).send(await engine.writeFile(input));
      },
    );
  });

  registerFileReadRoute(app, deps);

  app.get(
    '/v1/projects/:projectId/fs/stat',
    { schema: { params: ProjectParams, querystring: PathQuery }, config: { doc: { summary: 'Current entry of a path', tags, response: EntrySchema } } },
    async (request) => {
      const { project } = await authorizeProject(access, principalOf(request), request.params.projectId, 'read');
      const path = normalizeProjectPath(request.query.path, 'path');
      const entry = await engine.stat({ projectId: project.projectId, path });
      if (entry === null) throw new StrataError('PATH_NOT_FOUND', { details: { path } });
      return entry;
    },
  );

  app.post(
    '/v1/projects/:projectId/fs/delete',
    {
      schema: { params: ProjectParams, body: DeleteBody },
      config: { doc: { summary: 'Delete a file (records a tombstone)', tags, response: Type.Object({ version: VersionSchema }) } },
    },
    async (request) => {
      const principal = principalOf(request);
      const { project } = await authorizeProject(access, principal, request.params.projectId, 'write');
      const path = normalizeProjectPath(request.body.path, 'path');
      const input: Parameters<typeof engine.deleteFile>[0] = { projectId: project.projectId, path, actor: actorOf(principal) };
      if (request.body.baseVersionId !== undefined) input.baseVersionId = request.body.baseVersionId;
      return engine.deleteFile(input);
    },
  );

  app.get(
    '/v1/projects/:projectId/fs/dir',
    { schema: { params: ProjectParams, querystring: DirQuery }, config: { doc: { summary: 'List a directory (now, or as it was at a time)', tags, response: DirectorySchema } } },
    async (request) => {
      const { project } = await authorizeProject(access, principalOf(request), request.params.projectId, 'read');
      const path = normalizeDirectoryPath(request.query.path ?? '', 'path');
      const at = request.query.at;
      return engine.listDirectory({ projectId: project.projectId, path, ...(at === undefined ? {} : { at }) });
    },
  );

  app.post(
    '/v1/projects/:projectId/fs/rename',
    {
      schema: { params: ProjectParams, body: RenameBody },
      config: { doc: { summary: 'Rename a file', tags, response: Type.Object({ deleted: VersionSchema, created: WriteResultSchema }) } },
    },
    async (request) => {
      const principal = principalOf(request);
      const { project } = await authorizeProject(access, principal, request.params.projectId, 'write');
      const from = normalizeProjectPath(request.body.from, 'from');
      const to = normalizeProjectPath(request.body.to, 'to');
      const input: Parameters<typeof engine.renameFile>[0] = { projectId: project.projectId, from, to, actor: actorOf(principal) };
      if (request.body.overwrite !== undefined) input.overwrite = request.body.overwrite;
      return engine.renameFile(input);
    },
  );
}
