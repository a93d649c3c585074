// Credential → principal. Every failure is the same UNAUTHENTICATED error with the same message:
// which check failed (format, unknown id, secret, environment, revoked, expired, grace over) is
// never revealed to the caller, in the body or in the timing of the secret comparison.

import { StrataError } from '../errors.js';
import type { ApiKeyRecord } from '../types.js';
import { parseApiKey, secretMatches } from './api-key-format.js';
import type { Principal } from './context.js';
import type { AccessDeps } from './deps.js';

/** lastUsedAt is refreshed at most this often per key: one write per minute, not one per request. */
export const LAST_USED_RESOLUTION_MS = 60_000;

export function unauthenticated(): StrataError {
  return new StrataError('UNAUTHENTICATED');
}

/** Parses `Authorization` header values: `Bearer <credential>` (scheme case-insensitive). */
export function bearerCredential(header: string | undefined): string | null {
  if (header === undefined) return null;
  const match = /^Bearer +(\S+) *$/i.exec(header);
  return match === null ? null : match[1]!;
}

/** Whether the key record would authenticate at `nowMs` (format and secret aside). */
export function keyIsUsable(record: ApiKeyRecord, environment: string, nowMs: number): boolean {
  if (record.environment !== environment) return false;
  if (record.revokedAt !== null) return false;
  if (record.expiresAt !== null && Date.parse(record.expiresAt) <= nowMs) return false;
  // A rotated key keeps working only until its grace period ends.
  if (record.replacedBy !== null && (record.graceUntil === null || Date.parse(record.graceUntil) <= nowMs)) return false;
  return true;
}

export async function authenticateApiKey(deps: AccessDeps, credential: string): Promise<Principal> {
  return (await apiKeyAuthentication(deps, credential)).principal;
}

/** The principal, and when the key stops authenticating by itself (expiry, end of rotation grace). */
export async function apiKeyAuthentication(deps: AccessDeps, credential: string): Promise<{ principal: Principal; expiresAt: number | null }> {
  const parsed = parseApiKey(credential);
  if (parsed === null) throw unauthenticated();
  const access = deps.repository.access;
  const record = await access.getApiKey(parsed.keyId);
  // Always compute the HMAC, also for an unknown key id.
  const secretOk = secretMatches(deps.pepper, parsed.secret, record?.secretHmac ?? null);
  const nowMs = deps.clock.now();
  if (record === null || !secretOk) throw unauthenticated();
  if (parsed.environment !== record.environment || !keyIsUsable(record, deps.environment, nowMs)) throw unauthenticated();

  // The key's service identity must still exist and still belong to the key's organization.
  const [identity, role] = await Promise.all([access.getIdentity(record.identityId), access.getOrgRole(record.orgId, record.identityId)]);
  if (identity === null || role === null) throw unauthenticated();

  if (record.lastUsedAt === null || nowMs - Date.parse(record.lastUsedAt) >= LAST_USED_RESOLUTION_MS) {
    await access.touchApiKey(record.keyId, new Date(nowMs).toISOString());
  }
  const ends = [record.expiresAt, record.replacedBy === null ? null : record.graceUntil].filter((end): end is string => end !== null).map((end) => Date.parse(end));
  return {
    principal: { identity, authKind: 'api-key', keyId: record.keyId, orgId: record.orgId, projectScope: record.projectId, roleCap: record.roleCap },
    expiresAt: ends.length === 0 ? null : Math.min(...ends),
  };
}
