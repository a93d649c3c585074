// SSO connections of an organization (admin+): create, verify a domain, test a sign-in, activate,
// deactivate; and a diagnosis of which issuer an email signs in with, and why.

import { Type } from 'typebox';
import {
  createSsoConnection,
  diagnoseSignIn,
  getSsoConnection,
  listSsoConnections,
  setSsoActive,
  testSsoConnection,
  verifySsoDomain,
} from '../../engine/access/sso.js';
import { principalOf } from '../request-context.js';
import { listOf, Nullable } from '../resource-schemas.js';
import type { App, RouteDeps } from '../route-deps.js';
import { CreateSsoBody, DiagnoseQuery, EmptyBody, OrgParams, SsoDomainParams, SsoParams, TestSsoBody } from '../schemas.js';

const tags = ['sso'];

const SsoSchema = Type.Object({
  connectionId: Type.String(),
  orgId: Type.String(),
  issuer: Type.String(),
  clientId: Type.String(),
  audience: Type.String(),
  tokenType: Type.Union([Type.Literal('at+jwt'), Type.Literal('any')]),
  scopes: Type.Array(Type.String()),
  domains: Type.Array(Type.Object({ domain: Type.String(), verificationToken: Type.String(), verifiedAt: Nullable(Type.String()) })),
  testedAt: Nullable(Type.String()),
  testedSubject: Nullable(Type.String()),
  active: Type.Boolean(),
  activatedAt: Nullable(Type.String()),
  createdAt: Type.String(),
});

export function registerSsoRoutes(app: App, { access, signIn, txtResolver }: RouteDeps): void {
  app.post(
    '/v1/orgs/:orgId/sso',
    {
      schema: { params: OrgParams, body: CreateSsoBody },
      config: { doc: { summary: 'Create an SSO connection (inactive until a domain is verified and a test sign-in succeeded)', tags, status: 201, response: SsoSchema } },
    },
    async (request, reply) => {
      const { issuer, clientId, audience, tokenType, scopes, domains } = request.body;
      const input: Parameters<typeof createSsoConnection>[2] = { orgId: request.params.orgId, issuer, clientId, audience, domains };
      if (tokenType !== undefined) input.tokenType = tokenType;
      if (scopes !== undefined) input.scopes = scopes;
      return reply.code(201).send(await createSsoConnection(access, principalOf(request), input, signIn));
    },
  );

  app.get(
    '/v1/orgs/:orgId/sso',
    { schema: { params: OrgParams }, config: { doc: { summary: 'SSO connections of the organization', tags, response: listOf(SsoSchema) } } },
    async (request) => ({ items: await listSsoConnections(access, principalOf(request), request.params.orgId) }),
  );

  app.get(
    '/v1/orgs/:orgId/sso/:connectionId',
    { schema: { params: SsoParams }, config: { doc: { summary: 'One SSO connection, with its domains and their TXT tokens', tags, response: SsoSchema } } },
    async (request) => getSsoConnection(access, principalOf(request), request.params.orgId, request.params.connectionId),
  );

  app.post(
    '/v1/orgs/:orgId/sso/:connectionId/domains/:domain/verify',
    {
      schema: { params: SsoDomainParams, body: EmptyBody },
      config: { doc: { summary: 'Verify a domain: its TXT record must read strata-domain-verification=<token>', tags, response: SsoSchema } },
    },
    async (request) => verifySsoDomain(access, principalOf(request), request.params, txtResolver),
  );

  app.post(
    '/v1/orgs/:orgId/sso/:connectionId/test',
    {
      schema: { params: SsoParams, body: TestSsoBody },
      config: { doc: { summary: "Test a sign-in: a person's access token from the connection's issuer must verify", tags, response: SsoSchema } },
    },
    async (request) =>
      testSsoConnection(access, principalOf(request), { orgId: request.params.orgId, connectionId: request.params.connectionId, accessToken: request.body.accessToken }),
  );

  for (const [path, active] of [
    ['activate', true],
    ['deactivate', false],
  ] as const) {
    app.post(
      `/v1/orgs/:orgId/sso/:connectionId/${path}`,
      {
        schema: { params: SsoParams, body: EmptyBody },
        config: { doc: { summary: active ? 'Activate (refused until a domain is verified and a test sign-in succeeded)' : 'Deactivate: its tokens stop authenticating at once', tags, response: SsoSchema } },
      },
      async (request) => setSsoActive(access, principalOf(request), { orgId: request.params.orgId, connectionId: request.params.connectionId, active }),
    );
  }

  app.get(
    '/v1/orgs/:orgId/sso-diagnosis',
    {
      schema: { params: OrgParams, querystring: DiagnoseQuery },
      config: { doc: { summary: 'Which issuer an email signs in with, and why', tags } },
    },
    async (request) => diagnoseSignIn(access, principalOf(request), request.params.orgId, request.query.email, signIn),
  );
}
