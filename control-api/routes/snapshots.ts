import { Type } from 'typebox';
import { authorizeProject } from '../../engine/access/authorize.js';
import { actorOf } from '../../engine/access/context.js';
import { normalizeDirectoryPath } from '../../engine/paths.js';
import { principalOf } from '../request-context.js';
import { DiffSchema, listOf, pageOf, SnapshotEntrySchema, SnapshotSchema, TagSchema, VersionSchema } from '../resource-schemas.js';
import type { App, RouteDeps } from '../route-deps.js';
import { AddTagBody, CreateSnapshotBody, DiffQuery, EmptyBody, EntriesQuery, PageQuery, ProjectParams, SnapshotParams, TagParams } from '../schemas.js';

const tags = ['snapshots'];

export function registerSnapshotRoutes(app: App, { engine, access }: RouteDeps): void {
  app.post(
    '/v1/projects/:projectId/fs/snapshots',
    {
      schema: { params: ProjectParams, body: CreateSnapshotBody },
      config: { doc: { summary: 'Take a snapshot of the current tree', tags, status: 201, response: SnapshotSchema } },
    },
    async (request, reply) => {
      const principal = principalOf(request);
      const { project } = await authorizeProject(access, principal, request.params.projectId, 'write');
      const input: Parameters<typeof engine.createSnapshot>[0] = { projectId: project.projectId, actor: actorOf(principal) };
      if (request.body.message !== undefined) input.message = request.body.message;
      return reply.code(201).send(await engine.createSnapshot(input));
    },
  );

  app.get(
    '/v1/projects/:projectId/fs/snapshots',
    {
      schema: { params: ProjectParams, querystring: PageQuery },
      config: { doc: { summary: 'Snapshots, newest first', tags, response: pageOf(SnapshotSchema) } },
    },
    async (request) => {
      const { project } = await authorizeProject(access, principalOf(request), request.params.projectId, 'read');
      const input: Parameters<typeof engine.listSnapshots>[0] = { projectId: project.projectId, limit: request.query.limit ?? 100 };
      if (request.query.cursor !== undefined) input.cursor = request.query.cursor;
      return engine.listSnapshots(input);
    },
  );

  app.get(
    '/v1/projects/:projectId/fs/snapshots/:snapshotId',
    { schema: { params: SnapshotParams }, config: { doc: { summary: 'A snapshot, by id or tag', tags, response: SnapshotSchema } } },
    async (request) => {
      const { project } = await authorizeProject(access, principalOf(request), request.params.projectId, 'read');
      return engine.getSnapshot(project.projectId, request.params.snapshotId);
    },
  );

  app.get(
    '/v1/projects/:projectId/fs/snapshots/:snapshotId/entries',
    {
      schema: { params: SnapshotParams, querystring: EntriesQuery },
      config: { doc: { summary: 'Paths pinned by a snapshot', tags, response: pageOf(SnapshotEntrySchema) } },
    },
    async (request) => {
      const { project } = await authorizeProject(access, principalOf(request), request.params.projectId, 'read');
      const snapshot = await engine.getSnapshot(project.projectId, request.params.snapshotId);
      const input: Parameters<typeof engine.snapshotEntries>[0] = {
        projectId: project.projectId,
        snapshotId: snapshot.snapshotId,
        limit: request.query.limit ?? 100,
      };
      if (request.query.prefix !== undefined) input.prefix = normalizeDirectoryPath(request.query.prefix, 'prefix');
      if (request.query.cursor !== undefined) input.cursor = request.query.cursor;
      return engine.snapshotEntries(input);
    },
  );

  app.get(
    '/v1/projects/:projectId/fs/snapshots/:snapshotId/diff',
    {
      schema: { params: SnapshotParams, querystring: DiffQuery },
      config: { doc: { summary: 'Changes from a snapshot to another (or to the current tree)', tags, response: DiffSchema } },
    },
    async (request) => {
      const { project } = await authorizeProject(access, principalOf(request), request.params.projectId, 'read');
      const from = await engine.getSnapshot(project.projectId, request.params.snapshotId);
      const to = request.query.to === undefined ? null : await engine.getSnapshot(project.projectId, request.query.to);
      const input: Parameters<typeof engine.diffSnapshots>[0] = { projectId: project.projectId, from: from.snapshotId };
      if (to !== null) input.to = to.snapshotId;
      return { from: from.snapshotId, to: to?.snapshotId ?? null, items: await engine.diffSnapshots(input) };
    },
  );

  app.post(
    '/v1/projects/:projectId/fs/snapshots/:snapshotId/restore',
    {
      schema: { params: SnapshotParams, body: EmptyBody },
      config: {
        doc: {
          summary: 'Restore a snapshot (repoints changed paths)',
          tags,
          response: Type.Object({ snapshot: SnapshotSchema, changed: Type.Integer(), versions: Type.Array(VersionSchema) }),
        },
      },
    },
    async (request) => {
      const principal = principalOf(request);
      const { project } = await authorizeProject(access, principal, request.params.projectId, 'write');
      const snapshot = await engine.getSnapshot(project.projectId, request.params.snapshotId);
      return engine.restoreSnapshot({ projectId: project.projectId, snapshotId: snapshot.snapshotId, actor: actorOf(principal) });
    },
  );

  app.post(
    '/v1/projects/:projectId/fs/snapshots/:snapshotId/tags',
    { schema: { params: SnapshotParams, body: AddTagBody }, config: { doc: { summary: 'Tag a snapshot', tags, status: 201, response: TagSchema } } },
    async (request, reply) => {
      const principal = principalOf(request);
      const { project } = await authorizeProject(access, principal, request.params.projectId, 'write');
      const snapshot = await engine.getSnapshot(project.projectId, request.params.snapshotId);
      const tag = await engine.addTag({ projectId: project.projectId, snapshotId: snapshot.snapshotId, tag: request.body.tag, actor: actorOf(principal) });
      return reply.code(201).send(tag);
    },
  );

  app.get(
    '/v1/projects/:projectId/fs/tags',
    { schema: { params: ProjectParams }, config: { doc: { summary: 'Tags of the project', tags, response: listOf(TagSchema) } } },
    async (request) => {
      const { project } = await authorizeProject(access, principalOf(request), request.params.projectId, 'read');
      return { items: await engine.listTags(project.projectId) };
    },
  );

  app.delete(
    '/v1/projects/:projectId/fs/tags/:tag',
    { schema: { params: TagParams }, config: { doc: { summary: 'Delete a tag', tags, status: 204 } } },
    async (request, reply) => {
      const principal = principalOf(request);
      const { project } = await authorizeProject(access, principal, request.params.projectId, 'write');
      await engine.removeTag({ projectId: project.projectId, tag: request.params.tag, actor: actorOf(principal) });
      return reply.code(204).send();
    },
  );
}
