// Datasets over HTTP: the rules (track, untrack, threshold), the datasets of the tree, a version's
// manifest and a path's manifest history. Reading a dataset's bytes is the ordinary fs/read.
import { audit } from '../../engine/access/audit.js';
import { authorizeProject } from '../../engine/access/authorize.js';
import { actorOf } from '../../engine/access/context.js';
import { principalOf } from '../request-context.js';
import { DatasetHistorySchema, DatasetInfoSchema, DatasetRulesSchema, EntrySchema, VersionSchema } from '../resource-schemas.js';
import type { App, RouteDeps } from '../route-deps.js';
import { DatasetHistoryQuery, DatasetPatternBody, DatasetThresholdBody, ProjectParams, ReadQuery } from '../schemas.js';
import { Type } from 'typebox';

const tags = ['datasets'];

export function registerDatasetRoutes(app: App, { engine, access }: RouteDeps): void {
  app.get(
    '/v1/projects/:projectId/fs/datasets',
    {
      schema: { params: ProjectParams },
      config: { doc: { summary: 'Dataset rules and the datasets of the current tree', tags, response: Type.Object({ rules: DatasetRulesSchema, items: Type.Array(EntrySchema) }) } },
    },
    async (request) => {
      const { project } = await authorizeProject(access, principalOf(request), request.params.projectId, 'read');
      return { rules: project.datasets, items: await engine.listDatasets(project.projectId) };
    },
  );

  app.post(
    '/v1/projects/:projectId/fs/datasets/track',
    {
      schema: { params: ProjectParams, body: DatasetPatternBody },
      config: {
        doc: {
          summary: 'Track a path or glob as a dataset; matching files of the current tree become datasets at once',
          tags,
          response: Type.Object({ rules: DatasetRulesSchema, converted: Type.Array(VersionSchema) }),
        },
      },
    },
    async (request) => {
      const principal = principalOf(request);
      const { project } = await authorizeProject(access, principal, request.params.projectId, 'manage');
      const result = await engine.trackDataset({ projectId: project.projectId, pattern: request.body.pattern, actor: actorOf(principal) });
      await audit(access, { orgId: project.orgId, actorId: principal.identity.identityId, action: 'dataset.track', target: project.projectId, details: { pattern: request.body.pattern } });
      return result;
    },
  );

  app.post(
    '/v1/projects/:projectId/fs/datasets/untrack',
    {
      schema: { params: ProjectParams, body: DatasetPatternBody },
      config: { doc: { summary: 'Stop tracking a pattern (existing dataset versions stay datasets)', tags, response: Type.Object({ rules: DatasetRulesSchema }) } },
    },
    async (request) => {
      const principal = principalOf(request);
      const { project } = await authorizeProject(access, principal, request.params.projectId, 'manage');
      const rules = await engine.untrackDataset({ projectId: project.projectId, pattern: request.body.pattern });
      await audit(access, { orgId: project.orgId, actorId: principal.identity.identityId, action: 'dataset.untrack', target: project.projectId, details: { pattern: request.body.pattern } });
      return { rules };
    },
  );

  app.post(
    '/v1/projects/:projectId/fs/datasets/threshold',
    {
      schema: { params: ProjectParams, body: DatasetThresholdBody },
      config: { doc: { summary: 'Set the size above which every file is a dataset', tags, response: Type.Object({ rules: DatasetRulesSchema }) } },
    },
    async (request) => {
      const principal = principalOf(request);
      const { project } = await authorizeProject(access, principal, request.params.projectId, 'manage');
      const rules = await engine.setDatasetThreshold({ projectId: project.projectId, thresholdBytes: request.body.thresholdBytes });
      await audit(access, {
        orgId: project.orgId,
        actorId: principal.identity.identityId,
        action: 'dataset.threshold',
        target: project.projectId,
        details: { thresholdBytes: rules.thresholdBytes },
      });
      return { rules };
    },
  );

  app.get(
    '/v1/projects/:projectId/fs/dataset/manifest',
    {
      schema: { params: ProjectParams, querystring: ReadQuery },
      config: { doc: { summary: "A dataset's manifest: the current one of `path`, or that of `versionId`", tags, response: DatasetInfoSchema } },
    },
    async (request) => {
      const { project } = await authorizeProject(access, principalOf(request), request.params.projectId, 'read');
      const { path, versionId } = request.query;
      return engine.getDatasetManifest({ projectId: project.projectId, ...(path === undefined ? {} : { path }), ...(versionId === undefined ? {} : { versionId }) });
    },
  );

  app.get(
    '/v1/projects/:projectId/fs/dataset/history',
    {
      schema: { params: ProjectParams, querystring: DatasetHistoryQuery },
      config: { doc: { summary: 'The manifest history of a path, newest first, with shard counts', tags, response: DatasetHistorySchema } },
    },
    async (request) => {
      const { project } = await authorizeProject(access, principalOf(request), request.params.projectId, 'read');
      const { path, cursor, limit } = request.query;
      return engine.datasetHistory({ projectId: project.projectId, path, ...(cursor === undefined ? {} : { cursor }), ...(limit === undefined ? {} : { limit }) });
    },
  );
}
