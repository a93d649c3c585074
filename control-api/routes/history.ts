import { Type } from 'typebox';
import { authorizeProject } from '../../engine/access/authorize.js';
import { actorOf } from '../../engine/access/context.js';
import { normalizeProjectPath } from '../../engine/paths.js';
import { principalOf } from '../request-context.js';
import { pageOf, VersionSchema, WriteResultSchema } from '../resource-schemas.js';
import type { App, RouteDeps } from '../route-deps.js';
import { HistoryQuery, ProjectParams, RestoreVersionBody, VersionParams } from '../schemas.js';

const tags = ['history'];

const DiffVersionsQuery = Type.Object(
  {
    a: Type.String({ minLength: 1, maxLength: 64, description: 'the older version (an id or a short id)' }),
    b: Type.String({ minLength: 1, maxLength: 64, description: 'the newer version' }),
    context: Type.Optional(Type.Integer({ minimum: 0, maximum: 100, description: 'unchanged lines around each change (default 3)' })),
  },
  { additionalProperties: false },
);
const DiffLineSchema = Type.Union([Type.Object({ n: Type.Integer({ description: 'line number, from 1' }), text: Type.String() }), Type.Null()]);
const VersionDiffSchema = Type.Object({
  a: VersionSchema,
  b: VersionSchema,
  binary: Type.Boolean({ description: 'either side is not text: no rows' }),
  changedLines: Type.Integer(),
  rows: Type.Array(
    Type.Union([
      Type.Object({ kind: Type.Union(['equal', 'change', 'delete', 'insert'].map((k) => Type.Literal(k))), left: DiffLineSchema, right: DiffLineSchema }),
      Type.Object({ kind: Type.Literal('skip'), count: Type.Integer({ description: 'unchanged lines not shown' }) }),
    ]),
  ),
});

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
    '/v1/projects/:projectId/history/diff',
    {
      schema: { params: ProjectParams, querystring: DiffVersionsQuery },
      config: { doc: { summary: 'Two versions compared line by line: the changed lines with context (the history browser)', tags, response: VersionDiffSchema } },
    },
    async (request) => {
      const { project } = await authorizeProject(access, principalOf(request), request.params.projectId, 'read');
      const { a, b, context } = request.query;
      return engine.diffVersions({ projectId: project.projectId, a, b, ...(context === undefined ? {} : { context }) });
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

  app.get(
    '/v1/projects/:projectId/history/:versionId/rename',
    {
      schema: { params: VersionParams },
      config: {
        doc: {
          summary: 'The rename a version was made by (history --follow): the old path, its tombstone and its last version; null if none',
          tags,
          response: Type.Object({
            version: VersionSchema,
            renamedFrom: Type.Union([Type.Object({ path: Type.String(), tombstone: VersionSchema, source: VersionSchema }), Type.Null()]),
          }),
        },
      },
    },
    async (request) => {
      const { project } = await authorizeProject(access, principalOf(request), request.params.projectId, 'read');
      return engine.renameOf(project.projectId, request.params.versionId);
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
