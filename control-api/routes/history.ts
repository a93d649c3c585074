import { authorizeProject } from '../../engine/access/authorize.js';
import { actorOf } from '../../engine/access/context.js';
import { normalizeProjectPath } from '../../engine/paths.js';
import { principalOf } from '../request-context.js';
import { pageOf, VersionSchema, WriteResultSchema } from '../resource-schemas.js';
import type { App, RouteDeps } from '../route-deps.js';
import { HistoryQuery, ProjectParams, RestoreVersionBody, VersionParams } from '../schemas.js';

const tags = ['history'];

export function registerHistoryRoutes(app: App, { engine, access }: RouteDeps): void {
  app.get(
    '/v1/projects/:projectId/history',
    {
      schema: { params: ProjectParams, querystring: HistoryQuery },
      config: { doc: { summary: 'Version records, newest first', tags, response: pageOf(VersionSchema) } },
    },
    async (request) => {
      const { project } = await authorizeProject(access, principalOf(request), request.params.projectId, 'read');
      const { cursor, limit } = request.query;
      const input: Parameters<typeof engine.history>[0] = { projectId: project.projectId, limit: limit ?? 100 };
      if (request.query.path !== undefined) input.path = normalizeProjectPath(request.query.path, 'path');
      if (cursor !== undefined) input.cursor = cursor;
      return engine.history(input);
    },
  );

  app.get(
    '/v1/projects/:projectId/history/:versionId',
    { schema: { params: VersionParams }, config: { doc: { summary: 'One version record', tags, response: VersionSchema } } },
    async (request) => {
      const { project } = await authorizeProject(access, principalOf(request), request.params.projectId, 'read');
      return engine.getVersion(project.projectId, request.params.versionId);
    },
  );

  app.post(
    '/v1/projects/:projectId/history/restore',
    {
      schema: { params: ProjectParams, body: RestoreVersionBody },
      config: { doc: { summary: 'Restore a version (records a new version)', tags, status: 201, response: WriteResultSchema } },
    },
    async (request, reply) => {
      const principal = principalOf(request);
      const { project } = await authorizeProject(access, principal, request.params.projectId, 'write');
      const result = await engine.restoreVersion({ projectId: project.projectId, versionId: request.body.versionId, actor: actorOf(principal) });
      return reply.code(201).send(result);
    },
  );
}
