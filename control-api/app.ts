// The one control API factory. The daemon serves it on loopback for its local projects and
// `strata server` serves it to the network: same paths, same bodies, same errors.

import { createSecretKey, randomUUID } from 'node:crypto';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, { type FastifyInstance } from 'fastify';
import { auditOrigin } from '../engine/access/audit.js';
import type { AccessDeps } from '../engine/access/deps.js';
import { hostedIssuer, type HostedSignIn } from '../engine/access/resolve.js';
import { registerUiRoutes } from './routes/ui.js';
import { createUiLinks } from './ui-links.js';
import { cachingGrants, createPrincipalCache, notifyingAccessChanges } from '../engine/access/principal-cache.js';
import { connectionIssuer, systemTxtResolver, type TxtResolver } from '../engine/access/sso.js';
import { createTokenVerifier } from '../engine/access/token-verifier.js';
import type { Engine } from '../engine/engine-api.js';
import { StrataError } from '../engine/errors.js';
import { createIdGenerator } from '../engine/ids.js';
import type { MetadataRepository } from '../engine/ports/metadata-repository.js';
import { type Clock, type IdGenerator, systemClock } from '../engine/ports/world.js';
import { authHook, queryEncodingHook } from './auth.js';
import { clientErrorHandler, frameworkErrorHandler, installErrorHandling } from './errors.js';
import { type AppLoggerOptions, childLoggerFactory, loggerOptions } from './logging.js';
import { loopbackGuard } from './loopback.js';
import { installRateLimits, type RateLimitOptions } from './rate-limits.js';
import { createOpenApiCollector } from './openapi.js';
import { parseQueryString } from './query-string.js';
import { createRequestContext, genRequestId } from './request-context.js';
import type { App, RouteDeps } from './route-deps.js';
import { registerAdminRoutes } from './routes/admin.js';
import { registerAuthRoutes } from './routes/auth.js';
import { registerDatasetRoutes } from './routes/datasets.js';
import { registerFileRoutes } from './routes/files.js';
import { registerGitRoutes } from './routes/git.js';
import { registerHistoryRoutes } from './routes/history.js';
import { registerKeyRoutes } from './routes/keys.js';
import { registerOrgRoutes } from './routes/orgs.js';
import { registerProjectRoutes } from './routes/projects.js';
import { registerRetentionRoutes } from './routes/retention.js';
import { registerScimRoutes } from './routes/scim.js';
import { registerSnapshotRoutes } from './routes/snapshots.js';
import { registerSsoRoutes } from './routes/sso.js';
import { registerSyncRoutes } from './routes/sync.js';
import { validatorCompiler } from './validation.js';

/** JSON bodies are small: 1 MiB. File bytes go through the streaming upload route instead. */
export const DEFAULT_BODY_LIMIT = 1024 * 1024;
/** Largest single file upload: 20 GiB (datasets of several GB are normal). */
export const DEFAULT_MAX_UPLOAD_BYTES = 20 * 1024 ** 3;

export interface BuildAppOptions {
  engine: Engine;
  repository: MetadataRepository;
  /** HMAC key of API key secrets (from `<home>/secrets/pepper` or STRATA_PEPPER) */
  pepper: Buffer;
  /** deployment environment; only keys `rk.<environment>.…` authenticate */
  environment: string;
  /** the engine's clock, so key expiry and rotation grace follow the same (possibly frozen) time */
  clock?: Clock;
  ids?: IdGenerator;
  /** pino options (a `stream` may be given), or false for no logging (the default) */
  logger?: AppLoggerOptions | false;
  bodyLimit?: number;
  maxUploadBytes?: number;
  /** the daemon's loopback API: loopback Host only, no browser Origin */
  loopbackOnly?: boolean;
  /** the hosted OIDC identity: its access tokens authenticate, and `/auth/resolve` sends people to it */
  signIn?: HostedSignIn;
  /**
   * `GET /readyz`: each named check resolves when its backend answers (the metadata database, the
   * object store); absent: only liveness is served.
   */
  readiness?: Record<string, () => Promise<unknown>>;
  /** called once per answered request (server metrics) */
  observe?: (sample: { method: string; route: string; status: number; seconds: number }) => void;
  /** DNS TXT lookups for SSO domain verification (default: the system resolver) */
  txtResolver?: TxtResolver;
  /** rate limits per credential and for failed authentications (the network server); absent: none */
  rateLimit?: RateLimitOptions;
  /** how long an authenticated credential is remembered (default 2 s; 0: never) */
  principalTtlMs?: number;
  /** serve HTTPS with this certificate and key (else plain HTTP, behind a proxy that terminates TLS) */
  https?: { cert: Buffer; key: Buffer };
  /** proxies whose X-Forwarded-For is believed when resolving the client IP (Fastify trustProxy) */
  trustProxy?: boolean | string | string[] | ((address: string, hop: number) => boolean);
  /**
   * Routes only one host serves (the daemon's `/v1/daemon/*`), registered after the shared ones with
   * the same hooks: authentication, loopback guard, error bodies.
   */
  extraRoutes?: (app: App, deps: RouteDeps) => void;
}

export async function buildApp(options: BuildAppOptions): Promise<FastifyInstance> {
  const clock = options.clock ?? systemClock;
  const principals = createPrincipalCache(clock, options.principalTtlMs);
  const grants = cachingGrants(options.repository, clock, options.principalTtlMs);
  const access: AccessDeps = {
    // Every access change made through this app empties both caches before it is acknowledged.
    repository: notifyingAccessChanges(grants.repository, () => {
      principals.invalidate();
      grants.invalidate();
    }),
    clock,
    ids: options.ids ?? createIdGenerator(clock),
    pepper: createSecretKey(options.pepper),
    environment: options.environment,
  };
  access.signIns = new Set();
  const signIn = options.signIn;
  // Tokens of the hosted issuer, and of each organization's active SSO connection (looked up per
  // token: a deactivated connection stops authenticating at once).
  const hosted = signIn === undefined ? null : hostedIssuer(signIn);
  access.tokens = createTokenVerifier({
    clock,
    trustedIssuer: async (iss) => {
      if (hosted !== null && iss === hosted.issuer) return hosted;
      const connection = await options.repository.access.findActiveSsoConnection(iss);
      return connection === null ? null : connectionIssuer(connection);
    },
  });
  const deps: RouteDeps = {
    engine: options.engine,
    access,
    maxUploadBytes: options.maxUploadBytes ?? DEFAULT_MAX_UPLOAD_BYTES,
    txtResolver: options.txtResolver ?? systemTxtResolver,
  };
  if (signIn !== undefined) deps.signIn = signIn;

  const app = Fastify({
    ...(options.https === undefined ? {} : { https: options.https }),
    logger: loggerOptions(options.logger),
    bodyLimit: options.bodyLimit ?? DEFAULT_BODY_LIMIT,
    trustProxy: options.trustProxy ?? false,
    requestIdHeader: false,
    genReqId: genRequestId,
    childLoggerFactory,
    routerOptions: { querystringParser: parseQueryString, maxParamLength: 256 },
    frameworkErrors: frameworkErrorHandler,
    clientErrorHandler: clientErrorHandler(randomUUID),
    // Fastify's own 503 while closing has a different body; ours is below.
    return503OnClosing: false,
    // The HTTPS server is an https.Server: the routes see the same request and reply types.
  }).withTypeProvider<TypeBoxTypeProvider>() as unknown as App;
  app.setValidatorCompiler(validatorCompiler);
  installErrorHandling(app);

  // JSON only for bodies (text/plain is a 415, not a string that fails validation later); an empty
  // body on a JSON route counts as no body, so body-less POSTs work whatever the client sends.
  const jsonParser = app.getDefaultJsonParser('error', 'error');
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    const text = typeof body === 'string' ? body : body.toString('utf8');
    if (text === '') done(null, undefined);
    else jsonParser(request, text, done);
  });

  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
  });
  app.addHook('onRequest', async (request, reply) => {
    request.strata = createRequestContext(request);
    if (closing) {
      reply.header('connection', 'close');
      throw new StrataError('SHUTTING_DOWN');
    }
  });
  // Audit records made while serving a request name it (engine/access/audit.ts).
  app.addHook('onRequest', (request, _reply, done) => auditOrigin.run({ requestId: request.id, clientIp: request.ip }, done));
  if (options.loopbackOnly === true) app.addHook('onRequest', loopbackGuard);
  const limits = options.rateLimit === undefined ? null : await installRateLimits(app, options.rateLimit);
  app.addHook('onRequest', authHook(access, principals, limits?.authFailures ?? null, { sessionProof: options.loopbackOnly === true }));
  if (limits !== null) app.addHook('onRequest', limits.afterAuthentication);
  app.addHook('onRequest', queryEncodingHook);
  app.addHook('onSend', async (request, reply) => {
    reply.header('x-request-id', request.id);
    // A request that was in flight when shutdown began ends its connection with its answer: a kept-
    // alive idle connection would hold the closing server open until the client gave it up.
    if (closing) reply.header('connection', 'close');
  });
  const observe = options.observe;
  if (observe !== undefined) {
    app.addHook('onResponse', async (request, reply) => {
      // The route's pattern, never the URL: ids in paths would make a label value per request.
      observe({ method: request.method, route: request.routeOptions.url ?? 'unmatched', status: reply.statusCode, seconds: reply.elapsedTime / 1000 });
    });
  }

  const openapi = createOpenApiCollector();
  app.addHook('onRoute', (route) => openapi.onRoute(route));

  app.get('/healthz', { config: { public: true, doc: { summary: 'Liveness', tags: ['maintenance'] } } }, async () => ({ ok: true }));
  const readiness = options.readiness;
  if (readiness !== undefined) {
    app.get('/readyz', { config: { public: true, doc: { summary: 'Readiness: the metadata database and the object store answer (no auth)', tags: ['maintenance'] } } }, async () => {
      const checks = await checkReadiness(readiness);
      if (Object.values(checks).some((state) => state !== 'ok')) throw new StrataError('NOT_READY', { details: { checks } });
      return { ready: true, checks };
    });
  }
  let document: Record<string, unknown> | null = null;
  app.get('/openapi.json', { config: { public: true, doc: { summary: 'This document', tags: ['maintenance'] } } }, async () => {
    document ??= openapi.document({ title: 'Strata control API', version: '1' });
    return document;
  });

  registerProjectRoutes(app, deps);
  registerFileRoutes(app, deps);
  registerHistoryRoutes(app, deps);
  registerSnapshotRoutes(app, deps);
  registerRetentionRoutes(app, deps);
  registerDatasetRoutes(app, deps);
  registerGitRoutes(app, deps);
  registerSyncRoutes(app, deps);
  registerKeyRoutes(app, deps);
  registerAuthRoutes(app, deps);
  registerOrgRoutes(app, deps);
  registerSsoRoutes(app, deps);
  registerScimRoutes(app, deps);
  registerAdminRoutes(app, deps);
  registerUiRoutes(app, deps, createUiLinks(() => clock.now()));
  options.extraRoutes?.(app, deps);

  await app.ready();
  return app;
}

/** Each check within 2 s; a failure is reported by its error code or name, never its message. */
async function checkReadiness(checks: Record<string, () => Promise<unknown>>): Promise<Record<string, string>> {
  const entries = await Promise.all(
    Object.entries(checks).map(async ([name, check]): Promise<[string, string]> => {
      let timer: NodeJS.Timeout | undefined;
      try {
        await Promise.race([check(), new Promise((_, reject) => (timer = setTimeout(() => reject(Object.assign(new Error('timeout'), { code: 'TIMEOUT' })), 2_000)))]);
        return [name, 'ok'];
      } catch (error) {
        const code = (error as { code?: unknown }).code;
        return [name, typeof code === 'string' ? code : (error as Error).name];
      } finally {
        clearTimeout(timer);
      }
    }),
  );
  return Object.fromEntries(entries);
}
