import { createApiKey, listApiKeys, revokeApiKey, rotateApiKey } from '../../engine/access/api-keys.js';
import { principalOf } from '../request-context.js';
import { IssuedKeySchema, KeySchema, listOf } from '../resource-schemas.js';
import type { App, RouteDeps } from '../route-deps.js';
import { CreateKeyBody, EmptyBody, KeyParams, ListKeysQuery, RotateKeyBody } from '../schemas.js';

const tags = ['keys'];

export function registerKeyRoutes(app: App, { access }: RouteDeps): void {
  app.post(
    '/v1/keys',
    {
      schema: { body: CreateKeyBody },
      config: { doc: { summary: 'Create an API key (the key is shown once)', tags, status: 201, response: IssuedKeySchema } },
    },
    async (request, reply) => reply.code(201).send(await createApiKey(access, principalOf(request), request.body)),
  );

  app.get(
    '/v1/keys',
    { schema: { querystring: ListKeysQuery }, config: { doc: { summary: 'API keys (metadata only)', tags, response: listOf(KeySchema) } } },
    async (request) => {
      const input: { orgId?: string } = {};
      if (request.query.orgId !== undefined) input.orgId = request.query.orgId;
      return { items: await listApiKeys(access, principalOf(request), input) };
    },
  );

  app.post(
    '/v1/keys/:keyId/rotate',
    {
      schema: { params: KeyParams, body: RotateKeyBody },
      config: { doc: { summary: 'Rotate a key: a new key now, the old one until the grace ends', tags, status: 201, response: IssuedKeySchema } },
    },
    async (request, reply) => {
      const options: { graceSeconds?: number } = {};
      if (request.body.graceSeconds !== undefined) options.graceSeconds = request.body.graceSeconds;
      return reply.code(201).send(await rotateApiKey(access, principalOf(request), request.params.keyId, options));
    },
  );

  app.post(
    '/v1/keys/:keyId/revoke',
    { schema: { params: KeyParams, body: EmptyBody }, config: { doc: { summary: 'Revoke a key', tags, response: KeySchema } } },
    async (request) => revokeApiKey(access, principalOf(request), request.params.keyId),
  );
}
