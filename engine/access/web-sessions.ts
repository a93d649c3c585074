// A browser's sign-in: after the code exchange (control-api/web-sign-in.ts) the person gets a session
// whose random id lives only in an HttpOnly cookie; the database keeps its HMAC, its identity, the
// organization an SSO sign-in speaks for, and its end. Logging out revokes it, and so does the
// directory deactivating the person (SCIM).

import { randomBytes } from 'node:crypto';
import { isoTimestamp } from '../ports/world.js';
import { hmacSecret } from './api-key-format.js';
import { unauthenticated } from './authenticate.js';
import type { Principal } from './context.js';
import type { AccessDeps } from './deps.js';

/** A browser session lasts a working day, never longer than that. */
export const WEB_SESSION_MS = 12 * 3_600_000;
const SESSION_RE = /^[A-Za-z0-9_-]{43}$/;

/** `notAfter` (epoch ms): an earlier end, that of the credential the session was opened with. */
export async function createWebSession(deps: AccessDeps, principal: Principal, notAfter?: number): Promise<{ cookie: string; expiresAt: number }> {
  const id = randomBytes(32).toString('base64url');
  const now = deps.clock.now();
  const expiresAt = Math.min(now + WEB_SESSION_MS, notAfter ?? Number.POSITIVE_INFINITY);
  await deps.repository.access.applyAccessChanges([
    {
      kind: 'createWebSession',
      session: {
        sessionHmac: hmacSecret(deps.pepper, id),
        identityId: principal.identity.identityId,
        orgId: principal.orgId,
        createdAt: isoTimestamp(deps.clock),
        expiresAt: new Date(expiresAt).toISOString(),
        revokedAt: null,
      },
    },
  ]);
  return { cookie: id, expiresAt };
}

/** The principal of a session cookie; the same 401 for anything wrong with it. */
export async function sessionAuthentication(deps: AccessDeps, cookie: string): Promise<{ principal: Principal; expiresAt: number | null }> {
  if (!SESSION_RE.test(cookie)) throw unauthenticated();
  const session = await deps.repository.access.getWebSession(hmacSecret(deps.pepper, cookie));
  const expiresAt = session === null ? 0 : Date.parse(session.expiresAt);
  if (session === null || session.revokedAt !== null || expiresAt <= deps.clock.now()) throw unauthenticated();
  const identity = await deps.repository.access.getIdentity(session.identityId);
  if (identity === null) throw unauthenticated();
  return { principal: { identity, authKind: 'session', keyId: null, orgId: session.orgId, projectScope: null, roleCap: null }, expiresAt };
}

export async function revokeWebSession(deps: AccessDeps, cookie: string): Promise<void> {
  if (!SESSION_RE.test(cookie)) return;
  await deps.repository.access.applyAccessChanges([{ kind: 'revokeWebSessions', at: isoTimestamp(deps.clock), sessionHmac: hmacSecret(deps.pepper, cookie) }]);
}
