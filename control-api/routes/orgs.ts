import { Type } from 'typebox';
import { callerOrganizations } from '../../engine/access/authorize.js';
import { createOrgIdentity, listAudit, listOrgMembers, removeOrgMember, setOrgRole } from '../../engine/access/members.js';
import { principalOf } from '../request-context.js';
import { AuditSchema, IdentitySchema, listOf, OrgMembershipSchema, pageOf } from '../resource-schemas.js';
import type { App, RouteDeps } from '../route-deps.js';
import { CreateIdentityBody, OrgMemberParams, OrgParams, OrgRoleSchema, PageQuery, SetRoleBody } from '../schemas.js';

const tags = ['organizations'];

export const OrgItem = Type.Object({ orgId: Type.String(), name: Type.String(), role: OrgRoleSchema });

export function registerOrgRoutes(app: App, { access }: RouteDeps): void {
  app.get('/v1/orgs', { config: { doc: { summary: "The caller's organizations", tags, response: listOf(OrgItem) } } }, async (request) => {
    const orgs = await callerOrganizations(access, principalOf(request));
    return { items: orgs.map(({ org, role }) => ({ orgId: org.orgId, name: org.name, role })) };
  });

  app.post(
    '/v1/orgs/:orgId/identities',
    {
      schema: { params: OrgParams, body: CreateIdentityBody },
      config: {
        doc: {
          summary: 'Create an identity and make it a member (admin+)',
          tags,
          status: 201,
          response: Type.Object({ identity: IdentitySchema, membership: OrgMembershipSchema }),
        },
      },
    },
    async (request, reply) => {
      const { kind, name, email, role } = request.body;
      const input: Parameters<typeof createOrgIdentity>[2] = { orgId: request.params.orgId, kind, name };
      if (email !== undefined) input.email = email;
      if (role !== undefined) input.role = role;
      return reply.code(201).send(await createOrgIdentity(access, principalOf(request), input));
    },
  );

  app.get(
    '/v1/orgs/:orgId/members',
    { schema: { params: OrgParams }, config: { doc: { summary: 'Organization members', tags, response: listOf(OrgMembershipSchema) } } },
    async (request) => ({ items: await listOrgMembers(access, principalOf(request), request.params.orgId) }),
  );

  app.put(
    '/v1/orgs/:orgId/members/:identityId',
    {
      schema: { params: OrgMemberParams, body: SetRoleBody },
      config: { doc: { summary: 'Set an organization role (admin+; owner only by an owner)', tags, response: OrgMembershipSchema } },
    },
    async (request) =>
      setOrgRole(access, principalOf(request), { orgId: request.params.orgId, identityId: request.params.identityId, role: request.body.role }),
  );

  app.delete(
    '/v1/orgs/:orgId/members/:identityId',
    { schema: { params: OrgMemberParams }, config: { doc: { summary: 'Remove a member', tags, status: 204 } } },
    async (request, reply) => {
      await removeOrgMember(access, principalOf(request), { orgId: request.params.orgId, identityId: request.params.identityId });
      return reply.code(204).send();
    },
  );

  app.get(
    '/v1/orgs/:orgId/audit',
    { schema: { params: OrgParams, querystring: PageQuery }, config: { doc: { summary: 'Audit log, newest first', tags, response: pageOf(AuditSchema) } } },
    async (request) => {
      const input: Parameters<typeof listAudit>[2] = { orgId: request.params.orgId, limit: request.query.limit ?? 100 };
      if (request.query.cursor !== undefined) input.cursor = request.query.cursor;
      return listAudit(access, principalOf(request), input);
    },
  );
}
