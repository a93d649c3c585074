// Shared setup for the control API tests: a real local engine (SQLite + object directory) in a temp
// home, a frozen clock shared by the engine and key checks, a bootstrapped owner key, and the app
// with its log lines captured.

import { randomBytes } from 'node:crypto';
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import { buildApp } from '../control-api/app.js';
import { mintApiKey } from '../engine/access/api-keys.js';
import { bootstrapOrganization } from '../engine/access/bootstrap.js';
import type { AccessDeps } from '../engine/access/deps.js';
import type { HostedSignIn } from '../engine/access/resolve.js';
import type { TxtResolver } from '../engine/access/sso.js';
import type { RateLimitOptions } from '../control-api/rate-limits.js';
import { createIdGenerator } from '../engine/ids.js';
import { type LocalEngine, openLocalEngine } from '../engine/local.js';
import { type FrozenClock, frozenClock } from './helpers/clock.js';
import { tempDir } from './helpers/world.js';

export const ENVIRONMENT = 'test';

export interface Harness {
  app: FastifyInstance;
  local: LocalEngine;
  clock: FrozenClock;
  access: AccessDeps;
  ownerKey: string;
  ownerId: string;
  orgId: string;
  /** every log line the app wrote (JSON text) */
  logs: string[];
  request(
    method: InjectOptions['method'],
    url: string,
    options?: { key?: string | null; body?: unknown; payload?: string | Buffer; headers?: Record<string, string> },
  ): Promise<LightMyRequestResponse>;
  /** JSON body of a successful call; fails the test with the error body otherwise */
  ok<T = Record<string, unknown>>(method: InjectOptions['method'], url: string, options?: { key?: string; body?: unknown; status?: number }): Promise<T>;
  createProject(name: string, key?: string): Promise<string>;
  /** a new key (and service identity) created by `creator` (default: the owner) */
  createKey(body: Record<string, unknown>, creator?: string): Promise<{ apiKey: string; keyId: string; identityId: string }>;
  /** another organization with an owner key (made the way bootstrap makes the first) */
  createOrganization(name: string): Promise<{ orgId: string; apiKey: string }>;
  dispose(): Promise<void>;
}

export async function openHarness(
  options: { loopbackOnly?: boolean; maxUploadBytes?: number; bodyLimit?: number; signIn?: HostedSignIn;
    clockStart?: number;
    txtResolver?: TxtResolver;
    rateLimit?: RateLimitOptions;
    trustProxy?: string[];
    /** serve /readyz with checks of this harness's own repository and store */
    readyz?: boolean;
  } = {},
): Promise<Harness> {
  const dir = await tempDir('strata-api-');
  const clock = frozenClock(options.clockStart);
  const ids = createIdGenerator(clock);
  const local = await openLocalEngine({ home: dir.path, clock, ids, gcGraceMs: 0 });
  const pepper = randomBytes(32);
  const access: AccessDeps = { repository: local.repository, clock, ids, pepper, environment: ENVIRONMENT };
  const boot = await bootstrapOrganization(access, { orgName: 'Lab' });
  const logs: string[] = [];
  const app = await buildApp({
    engine: local.engine,
    repository: local.repository,
    pepper,
    environment: ENVIRONMENT,
    clock,
    ids,
    logger: { level: 'trace', stream: { write: (line: string) => logs.push(line) } },
    ...(options.loopbackOnly === undefined ? {} : { loopbackOnly: options.loopbackOnly }),
    ...(options.maxUploadBytes === undefined ? {} : { maxUploadBytes: options.maxUploadBytes }),
    ...(options.bodyLimit === undefined ? {} : { bodyLimit: options.bodyLimit }),
    ...(options.signIn === undefined ? {} : { signIn: options.signIn }),
    ...(options.txtResolver === undefined ? {} : { txtResolver: options.txtResolver }),
    ...(options.rateLimit === undefined ? {} : { rateLimit: options.rateLimit }),
    ...(options.trustProxy === undefined ? {} : { trustProxy: options.trustProxy }),
    ...(options.readyz === true
      ? { readiness: { metadata: () => local.repository.access.listOrganizations(), objects: () => local.store.has(`blake3:${'0'.repeat(64)}`) } }
      : {}),
  });

  const harness: Harness = {
    app,
    local,
    clock,
    access,
    ownerKey: boot.apiKey,
    ownerId: boot.identityId,
    orgId: boot.orgId,
    logs,
    async request(method, url, opts = {}) {
      const headers: Record<string, string> = { ...opts.headers };
      const key = opts.key === undefined ? boot.apiKey : opts.key;
      if (key !== null) headers['authorization'] = `Bearer ${key}`;
      const inject: InjectOptions = { method, url, headers };
      if (opts.body !== undefined) inject.payload = opts.body as InjectOptions['payload'];
      if (opts.payload !== undefined) inject.payload = opts.payload;
      return app.inject(inject);
    },
    async ok(method, url, opts = {}) {
      const res = await harness.request(method, url, opts);
      const expected = opts.status ?? (method === 'POST' ? [200, 201] : [200]);
      const statuses = Array.isArray(expected) ? expected : [expected];
      if (!statuses.includes(res.statusCode)) throw new Error(`${method} ${url} → ${res.statusCode}: ${res.body}`);
      return res.body === '' ? ({} as never) : res.json();
    },
    async createProject(name, key) {
      const project = await harness.ok<{ projectId: string }>('POST', '/v1/projects', { body: { name }, key: key ?? boot.apiKey, status: 201 });
      return project.projectId;
    },
    async createKey(body, creator) {
      const res = await harness.ok<{ apiKey: string; key: { keyId: string; identityId: string } }>('POST', '/v1/keys', {
        body,
        key: creator ?? boot.apiKey,
        status: 201,
      });
      return { apiKey: res.apiKey, keyId: res.key.keyId, identityId: res.key.identityId };
    },
    async createOrganization(name) {
      const orgId = ids.uuid();
      const ownerId = ids.uuid();
      const createdAt = new Date(clock.now()).toISOString();
      const { apiKey, record } = mintApiKey(access, { orgId, identityId: ownerId, projectId: null, ownerId, purpose: `owner of ${name}`, expiresAt: null, rotateBy: null });
      await local.repository.access.applyAccessChanges([
        { kind: 'createOrganization', org: { orgId, name, createdAt } },
        { kind: 'createIdentity', identity: { identityId: ownerId, kind: 'service', name: `owner of ${name}`, email: null, createdAt } },
        { kind: 'setOrgRole', membership: { orgId, identityId: ownerId, role: 'owner' } },
        { kind: 'createApiKey', key: record },
      ]);
      return { orgId, apiKey };
    },
    async dispose() {
      try {
        await app.close();
        await local.close();
      } finally {
        await dir.cleanup();
      }
    },
  };
  return harness;
}
