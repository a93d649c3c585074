import { audit } from '../../engine/access/audit.js';
import { authorizeOrg, authorizeProject, defaultOrgId, visibleProjects } from '../../engine/access/authorize.js';
import { listProjectMembers, removeProjectAccess, setProjectAccess } from '../../engine/access/members.js';
import { principalOf } from '../request-context.js';
import { listOf, PolicySchema, ProjectMembershipSchema, ProjectSchema } from '../resource-schemas.js';
import type { App, RouteDeps } from '../route-deps.js';
import { CreateProjectBody, ListProjectsQuery, PolicyBody, ProjectMemberParams, ProjectParams, SetAccessBody } from '../schemas.js';

const tags = ['projects'];

export function registerProjectRoutes(app: App, { engine, access }: RouteDeps): void {
  app.post(
    '/v1/projects',
    { schema: { body: CreateProjectBody }, config: { doc: { summary: 'Create a project', tags, status: 201, response: ProjectSchema } } },
    async (request, reply) => {
      const principal = principalOf(request);
      const orgId = request.body.orgId ?? (await defaultOrgId(access, principal));
      await authorizeOrg(access, principal, orgId, 'write');
      const project = await engine.createProject({ orgId, name: request.body.name });
      await audit(access, {
        orgId,
        actorId: principal.identity.identityId,
        action: 'project.create',
        target: project.projectId,
        details: { projectId: project.projectId },
      });
      return reply.code(201).send(project);
    },
  );

  app.get(
    '/v1/projects',
    { schema: { querystring: ListProjectsQuery }, config: { doc: { summary: 'Projects visible to the caller', tags, response: listOf(ProjectSchema) } } },
    async (request) => ({ items: await visibleProjects(access, principalOf(request), request.query.orgId) }),
  );

  app.get(
    '/v1/projects/:projectId',
    { schema: { params: ProjectParams }, config: { doc: { summary: 'Get a project', tags, response: ProjectSchema } } },
    async (request) => (await authorizeProject(access, principalOf(request), request.params.projectId, 'read')).project,
  );

  app.get(
    '/v1/projects/:projectId/policy',
    { schema: { params: ProjectParams }, config: { doc: { summary: 'Versioning policy', tags, response: PolicySchema } } },
    async (request) => (await authorizeProject(access, principalOf(request), request.params.projectId, 'read')).project.policy,
  );

  app.put(
    '/v1/projects/:projectId/policy',
    { schema: { params: ProjectParams, body: PolicyBody }, config: { doc: { summary: 'Change the versioning policy', tags, response: ProjectSchema } } },
    async (request) => {
      const principal = principalOf(request);
      const { project } = await authorizeProject(access, principal, request.params.projectId, 'manage');
      const updated = await engine.updatePolicy({ projectId: project.projectId, policy: request.body });
      await audit(access, {
        orgId: project.orgId,
        actorId: principal.identity.identityId,
        action: 'project.policy.set',
        target: project.projectId,
        details: { projectId: project.projectId },
      });
      return updated;
    },
  );

  app.get(
    '/v1/projects/:projectId/members',
    { schema: { params: ProjectParams }, config: { doc: { summary: 'Project memberships', tags, response: listOf(ProjectMembershipSchema) } } },
    async (request) => ({ items: await listProjectMembers(access, principalOf(request), request.params.projectId) }),
  );

  app.put(
    '/v1/projects/:projectId/members/:identityId',
    {
      schema: { params: ProjectMemberParams, body: SetAccessBody },
      config: { doc: { summary: 'Set a project membership (narrows the org role)', tags, response: ProjectMembershipSchema } },
    },
    async (request) =>
      setProjectAccess(access, principalOf(request), {
        projectId: request.params.projectId,
        identityId: request.params.identityId,
        access: request.body.access,
      }),
  );

  app.delete(
    '/v1/projects/:projectId/members/:identityId',
    { schema: { params: ProjectMemberParams }, config: { doc: { summary: 'Remove a project membership', tags, status: 204 } } },
    async (request, reply) => {
      await removeProjectAccess(access, principalOf(request), { projectId: request.params.projectId, identityId: request.params.identityId });
      return reply.code(204).send();
    },
  );
}
