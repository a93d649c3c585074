// SCIM 2.0 under /scim/v2, for an organization's directory (Okta, Microsoft Entra ID): its own bearer
// token (the organization is the token's), bodies in application/scim+json, and errors in SCIM's
// shape (RFC 7644 §3.12) with Strata's error object beside it. The set-up routes for admins live
// under /v1/orgs/{orgId}/scim.

import type { FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { bearerCredential } from '../../engine/access/authenticate.js';
import { authenticateScimToken, getScimSettings, issueScimToken, setScimRoles } from '../../engine/access/scim/config.js';
import { resourceTypes, schemas, serviceProviderConfig } from '../../engine/access/scim/documents.js';
import {
  createGroup,
  createUser,
  deleteGroup,
  deleteUser,
  getGroup,
  getUser,
  listGroups,
  listUsers,
  patchGroup,
  patchUser,
  replaceGroup,
  replaceUser,
  type ScimContext,
} from '../../engine/access/scim/provisioning.js';
import { StrataError } from '../../engine/errors.js';
import type { ScimConfig } from '../../engine/types.js';
import { errorBody, toPublicError } from '../errors.js';
import { principalOf } from '../request-context.js';
import type { App, RouteDeps } from '../route-deps.js';
import { EmptyBody, OrgParams } from '../schemas.js';

const SCIM_TYPE = 'application/scim+json; charset=utf-8';
const ERROR_SCHEMA = 'urn:ietf:params:scim:api:messages:2.0:Error';
const SCIM_TYPES: Partial<Record<string, string>> = {
  SCIM_USERNAME_TAKEN: 'uniqueness',
  SCIM_GROUP_NAME_TAKEN: 'uniqueness',
  SCIM_INVALID_FILTER: 'invalidFilter',
  SCIM_INVALID_PATH: 'invalidPath',
  SCIM_INVALID_VALUE: 'invalidValue',
  INVALID_BODY: 'invalidSyntax',
};

declare module 'fastify' {
  interface FastifyRequest {
    scim?: ScimConfig;
  }
}

const ProvisionedRole = Type.Union([Type.Literal('viewer'), Type.Literal('member'), Type.Literal('admin')]);

function scimError(request: FastifyRequest, reply: FastifyReply, error: unknown): FastifyReply {
  const { error: publicError, expected } = toPublicError(error);
  if (!expected) request.log.error({ err: error }, 'request failed');
  if (publicError.code === 'UNAUTHENTICATED') reply.header('www-authenticate', 'Bearer');
  const scimType = SCIM_TYPES[publicError.code];
  return reply
    .code(publicError.status)
    .type(SCIM_TYPE)
    .send({ schemas: [ERROR_SCHEMA], status: String(publicError.status), ...(scimType === undefined ? {} : { scimType }), detail: publicError.message, ...errorBody(request, publicError) });
}

function numberParam(value: unknown, name: string): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || !/^\d{1,9}$/.test(value)) throw new StrataError('INVALID_QUERY', { message: `${name} must be a non-negative integer`, details: { field: name } });
  return Number(value);
}

export function registerScimRoutes(app: App, { access }: RouteDeps): void {
  // --- set-up, for organization admins (normal credentials) ---
  app.post(
    '/v1/orgs/:orgId/scim/token',
    { schema: { params: OrgParams, body: EmptyBody }, config: { doc: { summary: 'Issue the organization’s SCIM token (shown once; replaces the previous one)', tags: ['scim'], status: 201 } } },
    async (request, reply) => reply.code(201).send(await issueScimToken(access, principalOf(request), request.params.orgId)),
  );
  app.get(
    '/v1/orgs/:orgId/scim',
    { schema: { params: OrgParams }, config: { doc: { summary: 'SCIM set-up: token id, default role, group → role mapping', tags: ['scim'] } } },
    async (request) => getScimSettings(access, principalOf(request), request.params.orgId),
  );
  app.put(
    '/v1/orgs/:orgId/scim/roles',
    {
      schema: {
        params: OrgParams,
        body: Type.Object(
          { defaultRole: ProvisionedRole, groupRoles: Type.Record(Type.String({ minLength: 1, maxLength: 256 }), ProvisionedRole, { maxProperties: 200 }) },
          { additionalProperties: false },
        ),
      },
      config: { doc: { summary: 'Map directory groups (by displayName) to organization roles', tags: ['scim'] } },
    },
    async (request) => setScimRoles(access, principalOf(request), { orgId: request.params.orgId, ...request.body }),
  );

  // --- the SCIM protocol, for the directory ---
  app.register(async (scim) => {
    scim.addContentTypeParser('application/scim+json', { parseAs: 'string' }, (_request, body, done) => {
      const text = typeof body === 'string' ? body : body.toString('utf8');
      if (text === '') {
        done(null, undefined);
        return;
      }
      try {
        done(null, JSON.parse(text));
      } catch {
        done(new StrataError('INVALID_BODY', { message: 'The request body is not valid JSON' }), undefined);
      }
    });
    scim.setErrorHandler((error, request, reply) => scimError(request, reply, error));
    scim.addHook('onRequest', async (request) => {
      const credential = bearerCredential(request.headers.authorization);
      if (credential === null) throw new StrataError('UNAUTHENTICATED');
      request.scim = await authenticateScimToken(access, credential);
    });
    scim.addHook('onSend', async (_request, reply, payload) => {
      if (reply.statusCode !== 204) reply.type(SCIM_TYPE);
      return payload;
    });

    const context = (request: FastifyRequest): ScimContext => ({
      deps: access,
      config: request.scim!,
      baseUrl: `${request.protocol}://${request.host}/scim/v2`,
    });
    const listQuery = (request: FastifyRequest) => {
      const query = request.query as Record<string, unknown>;
      const filter = typeof query['filter'] === 'string' ? query['filter'] : undefined;
      const excluded = typeof query['excludedAttributes'] === 'string' ? query['excludedAttributes'].toLowerCase().split(',').map((s) => s.trim()) : [];
      return {
        ...(filter === undefined ? {} : { filter }),
        ...(numberParam(query['startIndex'], 'startIndex') === undefined ? {} : { startIndex: numberParam(query['startIndex'], 'startIndex')! }),
        ...(numberParam(query['count'], 'count') === undefined ? {} : { count: numberParam(query['count'], 'count')! }),
        members: !excluded.includes('members'),
      };
    };
    const config = { public: true, doc: { summary: 'SCIM 2.0 (RFC 7644), with the organization’s SCIM token', tags: ['scim'] } };
    const id = (request: FastifyRequest) => (request.params as { id: string }).id;

    scim.get('/scim/v2/ServiceProviderConfig', { config }, async (request) => serviceProviderConfig(context(request).baseUrl));
    scim.get('/scim/v2/ResourceTypes', { config }, async (request) => {
      const items = resourceTypes(context(request).baseUrl);
      return { schemas: ['urn:ietf:params:scim:api:messages:2.0:ListResponse'], totalResults: items.length, startIndex: 1, itemsPerPage: items.length, Resources: items };
    });
    scim.get('/scim/v2/Schemas', { config }, async (request) => {
      const items = schemas(context(request).baseUrl);
      return { schemas: ['urn:ietf:params:scim:api:messages:2.0:ListResponse'], totalResults: items.length, startIndex: 1, itemsPerPage: items.length, Resources: items };
    });

    scim.get('/scim/v2/Users', { config }, async (request) => listUsers(context(request), listQuery(request)));
    scim.post('/scim/v2/Users', { config }, async (request, reply) => reply.code(201).send(await createUser(context(request), request.body)));
    scim.get('/scim/v2/Users/:id', { config }, async (request) => getUser(context(request), id(request)));
    scim.put('/scim/v2/Users/:id', { config }, async (request) => replaceUser(context(request), id(request), request.body));
    scim.patch('/scim/v2/Users/:id', { config }, async (request) => patchUser(context(request), id(request), request.body));
    scim.delete('/scim/v2/Users/:id', { config }, async (request, reply) => {
      await deleteUser(context(request), id(request));
      return reply.code(204).send();
    });

    scim.get('/scim/v2/Groups', { config }, async (request) => listGroups(context(request), listQuery(request)));
    scim.post('/scim/v2/Groups', { config }, async (request, reply) => reply.code(201).send(await createGroup(context(request), request.body)));
    scim.get('/scim/v2/Groups/:id', { config }, async (request) => getGroup(context(request), id(request), { members: listQuery(request).members }));
    scim.put('/scim/v2/Groups/:id', { config }, async (request) => replaceGroup(context(request), id(request), request.body));
    scim.patch('/scim/v2/Groups/:id', { config }, async (request, reply) => {
      const group = await patchGroup(context(request), id(request), request.body);
      // Entra accepts 204 or 200 with the group; Okta reads the body. Send it.
      return reply.code(200).send(group);
    });
    scim.delete('/scim/v2/Groups/:id', { config }, async (request, reply) => {
      await deleteGroup(context(request), id(request));
      return reply.code(204).send();
    });
  });
}
