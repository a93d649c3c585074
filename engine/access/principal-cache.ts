// Who a credential is, remembered for a moment. Authenticating costs database reads (the key, its
// identity, its role) or a signature check (an ES256 JWT): ~50 µs per request on this machine, as much
// as a cheap route itself (bench/auth-overhead.ts). A credential seen within the last two seconds is
// answered from memory instead.
//
// Staleness is bounded three ways: an entry lives at most TTL_MS; never past the credential's own
// expiry (a key's expiresAt or rotation grace, a token's exp); and any change to the access tables made
// through this process (a revoked key, a changed role, a removed member) empties the cache before the
// change is acknowledged — with a generation counter, so an authentication that started before the
// change cannot put its stale answer back afterwards. Other processes over the same database (replicas)
// see a change within TTL_MS. Failures are never cached: a bad credential pays the full check each time.

import type { AccessRepository, MetadataRepository } from '../ports/metadata-repository.js';
import type { Clock } from '../ports/world.js';
import type { Principal } from './context.js';

export const PRINCIPAL_TTL_MS = 2_000;
const MAX_ENTRIES = 10_000;

interface Entry {
  principal: Principal;
  notAfter: number;
}

export interface PrincipalCache {
  /** `authenticate` runs on a miss; `expiresAt` (epoch ms or null) is the credential's own end */
  get(credential: string, authenticate: () => Promise<{ principal: Principal; expiresAt: number | null }>): Promise<Principal>;
  invalidate(): void;
}

export function createPrincipalCache(clock: Clock, ttlMs = PRINCIPAL_TTL_MS): PrincipalCache {
  // Keyed by the credential itself. A SHA-256 of it cost more than the rest of authentication (the
  // overhead over an unauthenticated route went 3-5 % → 11-12 % with it; bench/auth-overhead.ts): the
  // string is already in this process's memory as the request's header, the map is private to this
  // closure, and nothing here is logged or serialized.
  const entries = new Map<string, Entry>();
  let generation = 0;
  return {
    async get(credential, authenticate) {
      const key = credential;
      const now = clock.now();
      const hit = entries.get(key);
      if (hit !== undefined && hit.notAfter > now) return hit.principal;
      if (hit !== undefined) entries.delete(key);
      const started = generation;
      const { principal, expiresAt } = await authenticate();
      if (generation === started && ttlMs > 0) {
        if (entries.size >= MAX_ENTRIES) entries.delete(entries.keys().next().value as string); // oldest first
        entries.set(key, { principal, notAfter: Math.min(clock.now() + ttlMs, expiresAt ?? Number.POSITIVE_INFINITY) });
      }
      return principal;
    },
    invalidate() {
      generation += 1;
      entries.clear();
    },
  };
}

/** Methods of the access group that only read (or only refresh lastUsedAt): they leave the cache alone. */
const READS = /^(get|list|find|touch)/;

/**
 * The repository with every access-changing method followed by `changed()`, called when the change
 * settled (committed or failed) and before its caller continues.
 */
export function notifyingAccessChanges(repository: MetadataRepository, changed: () => void): MetadataRepository {
  const access = repository.access;
  const wrapped = {} as Record<string, unknown>;
  for (const name of Object.keys(access) as Array<keyof AccessRepository>) {
    const member = access[name] as unknown;
    if (typeof member !== 'function') continue;
    const method = member as (...args: unknown[]) => Promise<unknown>;
    wrapped[name] = READS.test(name)
      ? method.bind(access)
      : async (...args: unknown[]) => {
          try {
            return await method.apply(access, args);
          } finally {
            changed();
          }
        };
  }
  return { ...repository, access: wrapped as unknown as AccessRepository, close: () => repository.close() };
}

export interface GrantCache {
  repository: MetadataRepository;
  invalidate(): void;
}

/**
 * The two reads every authorized project request makes after authentication — the caller's role in
 * the organization and their membership of the project — remembered like principals: TTL_MS at most,
 * emptied by any access change made through this process (the same `notifyingAccessChanges` hook),
 * with a generation counter against stale answers put back. On Postgres each is a round trip per
 * request (bench/server-storage.ts counted 13 statements per small write, 2 of them these).
 */
export function cachingGrants(repository: MetadataRepository, clock: Clock, ttlMs = PRINCIPAL_TTL_MS): GrantCache {
  const entries = new Map<string, { value: unknown; notAfter: number }>();
  let generation = 0;
  const remembered = <T>(key: string, read: () => Promise<T>): Promise<T> => {
    const hit = entries.get(key);
    if (hit !== undefined && hit.notAfter > clock.now()) return Promise.resolve(hit.value as T);
    const started = generation;
    return read().then((value) => {
      if (generation === started && ttlMs > 0) {
        if (entries.size >= MAX_ENTRIES) entries.delete(entries.keys().next().value as string);
        entries.set(key, { value, notAfter: clock.now() + ttlMs });
      }
      return value;
    });
  };
  const access = repository.access;
  // A copy of the group's methods (plain objects: notifyingAccessChanges enumerates them), two replaced.
  const cached: AccessRepository = { ...access };
  // JSON keys: ids cannot collide across the two kinds or across argument boundaries.
  cached.getOrgRole = (orgId, identityId) => remembered(JSON.stringify(['role', orgId, identityId]), () => access.getOrgRole(orgId, identityId));
  cached.getProjectAccess = (projectId, identityId) =>
    remembered(JSON.stringify(['member', projectId, identityId]), () => access.getProjectAccess(projectId, identityId));
  return {
    repository: { ...repository, access: cached, close: () => repository.close() },
    invalidate() {
      generation += 1;
      entries.clear();
    },
  };
}
