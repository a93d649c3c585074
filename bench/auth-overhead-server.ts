// Child process of bench/auth-overhead.ts: the control API over a fresh home with the hosted identity
// configured, plus two copies of the file-stat route — one public (the principal fixed at start, so
// no authentication runs) and one behind the normal authentication hook — so the benchmark compares
// the same work with and without authenticating the request. Prints one JSON line when listening.

import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildApp } from '../control-api/app.js';
import { DEFAULT_RATE_LIMITS, parseRate } from '../control-api/rate-limits.js';
import { principalOf } from '../control-api/request-context.js';
import { authenticateApiKey } from '../engine/access/authenticate.js';
import { authorizeProject } from '../engine/access/authorize.js';
import { bootstrapOrganization } from '../engine/access/bootstrap.js';
import type { Principal } from '../engine/access/context.js';
import { createIdGenerator } from '../engine/ids.js';
import { openLocalEngine } from '../engine/local.js';
import { systemClock } from '../engine/ports/world.js';
import { BENCH_ACTOR } from './lib/strata.js';

const [issuer, audience] = process.argv.slice(2);
const home = mkdtempSync(join(tmpdir(), 'strata-auth-bench-'));
const local = await openLocalEngine({ home });
const pepper = Buffer.alloc(32, 7);
const access = { repository: local.repository, clock: systemClock, ids: createIdGenerator(systemClock), pepper, environment: 'bench' };
const boot = await bootstrapOrganization(access);
const project = await local.engine.createProject({ orgId: boot.orgId, name: 'bench' });
await local.engine.writeFile({ projectId: project.projectId, path: 'notes.md', actor: BENCH_ACTOR, content: new TextEncoder().encode('hello') });
const fixed: Principal = await authenticateApiKey({ ...access, pepper }, boot.apiKey);

const app = await buildApp({
  engine: local.engine,
  repository: local.repository,
  pepper,
  environment: 'bench',
  // BENCH_PRINCIPAL_TTL_MS=0: every request authenticates in full (the cost of a cache miss).
  principalTtlMs: Number(process.env['BENCH_PRINCIPAL_TTL_MS'] ?? 2_000),
  // BENCH_RATE_LIMIT=N/Ss: the per-credential limit of `strata serve` (bench/rate-limit-flood.ts).
  ...(process.env['BENCH_RATE_LIMIT'] === undefined
    ? {}
    : { rateLimit: { ...DEFAULT_RATE_LIMITS, ...parseRate(process.env['BENCH_RATE_LIMIT'], 'BENCH_RATE_LIMIT')! } }),
  signIn: { issuer: issuer!, audience: audience!, clientId: 'strata-cli', scopes: ['openid'], tokenType: 'at+jwt' },
  extraRoutes: (routes, deps) => {
    const stat = async (principal: Principal, projectId: string) => {
      const grant = await authorizeProject(deps.access, principal, projectId, 'read');
      return deps.engine.stat({ projectId: grant.project.projectId, path: 'notes.md' });
    };
    routes.get('/bench/open/:projectId', { config: { public: true } }, async (request) => stat(fixed, (request.params as { projectId: string }).projectId));
    routes.get('/bench/auth/:projectId', async (request) => stat(principalOf(request), (request.params as { projectId: string }).projectId));
  },
});
await app.listen({ host: '127.0.0.1', port: 0 });
const address = app.server.address() as { port: number };
process.stdout.write(`${JSON.stringify({ url: `http://127.0.0.1:${address.port}`, apiKey: boot.apiKey, orgId: boot.orgId, projectId: project.projectId })}\n`);
process.on('SIGTERM', () => {
  void app.close().then(() => local.close()).then(() => process.exit(0));
});
