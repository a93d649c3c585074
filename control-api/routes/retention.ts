import { Type } from 'typebox';
import { audit } from '../../engine/access/audit.js';
import { authorizeProject } from '../../engine/access/authorize.js';
import { actorOf } from '../../engine/access/context.js';
import { principalOf } from '../request-context.js';
import { RetentionSchema } from '../resource-schemas.js';
import type { App, RouteDeps } from '../route-deps.js';
import { ProjectParams, RetentionBody } from '../schemas.js';

const tags = ['retention'];

// The setting, and what applying it pruned at once (or, with dryRun, would prune: then also the
// setting in force and the paths with the most bytes to prune).
const RetentionResultSchema = Type.Object({
  projectId: Type.String(),
  maxVersions: Type.Integer(),
  dryRun: Type.Optional(Type.Boolean()),
  currentMaxVersions: Type.Optional(Type.Integer()),
  pruned: Type.Object({
    versions: Type.Integer(),
    bytes: Type.Integer({ description: "the pruned versions' sizes, summed (content other versions share stays stored)" }),
    pathCount: Type.Optional(Type.Integer()),
    paths: Type.Optional(Type.Array(Type.Object({ path: Type.String(), versions: Type.Integer(), bytes: Type.Integer() }))),
  }),
});

export function registerRetentionRoutes(app: App, { engine, access }: RouteDeps): void {
  app.get(
    '/v1/projects/:projectId/fs/retention',
    { schema: { params: ProjectParams }, config: { doc: { summary: 'Retention setting', tags, response: RetentionSchema } } },
    async (request) => {
      const { project } = await authorizeProject(access, principalOf(request), request.params.projectId, 'read');
      return engine.getRetention(project.projectId);
    },
  );

  app.post(
    '/v1/projects/:projectId/fs/retention',
    {
      schema: { params: ProjectParams, body: RetentionBody },
      config: {
        doc: { summary: 'Set retention (versions kept per path; 0 = unlimited); dryRun says what it would prune', tags, response: RetentionResultSchema },
      },
    },
    async (request) => {
      const principal = principalOf(request);
      if (request.body.dryRun === true) {
        // Changes nothing, so reading the project is enough to ask.
        const { project } = await authorizeProject(access, principal, request.params.projectId, 'read');
        return engine.previewRetention({ projectId: project.projectId, maxVersions: request.body.maxVersions });
      }
      const { project } = await authorizeProject(access, principal, request.params.projectId, 'manage');
      const setting = await engine.setRetention({ projectId: project.projectId, maxVersions: request.body.maxVersions, actor: actorOf(principal) });
      await audit(access, {
        orgId: project.orgId,
        actorId: principal.identity.identityId,
        action: 'retention.set',
        target: project.projectId,
        details: { projectId: project.projectId, maxVersions: setting.maxVersions, prunedVersions: setting.pruned.versions },
      });
      return setting;
    },
  );
}
