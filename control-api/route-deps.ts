import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import type { AccessDeps } from '../engine/access/deps.js';
import type { HostedSignIn } from '../engine/access/resolve.js';
import type { TxtResolver } from '../engine/access/sso.js';
import type { Engine } from '../engine/engine-api.js';

export type App = FastifyInstance<Server, IncomingMessage, ServerResponse, FastifyBaseLogger, TypeBoxTypeProvider>;

export interface RouteDeps {
  engine: Engine;
  access: AccessDeps;
  /** largest accepted upload, enforced while streaming */
  maxUploadBytes: number;
  /** the hosted identity people sign in with; absent: API keys only */
  signIn?: HostedSignIn;
  /** DNS TXT lookups (SSO domain verification) */
  txtResolver: TxtResolver;
}
