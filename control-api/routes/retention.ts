import { audit } from '../../engine/access/audit.js';
import { authorizeProject } from '../../engine/access/authorize.js';
import { actorOf } from '../../engine/access/context.js';
import { principalOf } from '../request-context.js';
import { RetentionSchema } from '../resource-schemas.js';
import type { App, RouteDeps } from '../route-deps.js';
import { ProjectParams, RetentionBody } from '../schemas.js';

const tags = ['retention'];

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
      config: { doc: { summary: 'Set retention (versions kept per path; 0 = unlimited)', tags, response: RetentionSchema } },
    },
    async (request) => {
      const principal = principalOf(request);
      const { project } = await authorizeProject(access, principal, request.params.projectId, 'manage');
      const setting = await engine.setRetention({ projectId: project.projectId, maxVersions: request.body.maxVersions, actor: actorOf(principal) });
      await audit(access, {
        orgId: project.orgId,
        actorId: principal.identity.identityId,
        action: 'retention.set',
        target: project.projectId,
        details: { projectId: project.projectId, maxVersions: setting.maxVersions },
      });
      return setting;
    },
  );
}
