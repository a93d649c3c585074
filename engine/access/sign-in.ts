// Verified OIDC access token → principal. `(iss, sub)` is who the token says; the identity it links to
// is who that is here. The first token of a subject creates its identity just in time: a person (kind
// `user`) for a user's token, a service identity for a client-credentials token. A person signing in
// through an organization's SSO connection also joins that organization (as a member) on first use.

import { isStrataError } from '../errors.js';
import type { AccessChange } from '../ports/metadata-repository.js';
import { isoTimestamp } from '../ports/world.js';
import type { Identity } from '../types.js';
import { unsafeCharacterReason } from '../unsafe-text.js';
import { audit, auditChange } from './audit.js';
import { unauthenticated } from './authenticate.js';
import type { Principal } from './context.js';
import type { AccessDeps } from './deps.js';
import type { TokenVerifier, VerifiedToken } from './token-verifier.js';

const MAX_NAME_LENGTH = 200;

export async function authenticateAccessToken(deps: AccessDeps, verifier: TokenVerifier, token: string): Promise<Principal> {
  return (await accessTokenAuthentication(deps, verifier, token)).principal;
}

/** The principal, and the token's expiry (epoch ms). */
export async function accessTokenAuthentication(
  deps: AccessDeps,
  verifier: TokenVerifier,
  token: string,
): Promise<{ principal: Principal; expiresAt: number | null }> {
  const verified = await verifier.verify(token);
  const identity = await linkedIdentity(deps, verified);
  if (identity === null) throw unauthenticated();
  // A token from an organization's own issuer speaks for that organization only.
  const principal: Principal = { identity, authKind: 'oidc', keyId: null, orgId: verified.issuer.orgId, projectScope: null, roleCap: null };
  await auditSignIn(deps, verified, principal);
  return { principal, expiresAt: typeof verified.claims.exp === 'number' ? verified.claims.exp * 1000 : null };
}

const MAX_SIGN_INS_REMEMBERED = 100_000;

/**
 * A token's first use here is a sign-in: audited in the organization it speaks for (an SSO issuer's),
 * or in every organization of the person (the hosted issuer). Another replica may audit it once more.
 */
async function auditSignIn(deps: AccessDeps, verified: VerifiedToken, principal: Principal): Promise<void> {
  const seen = deps.signIns;
  const jti = typeof verified.claims.jti === 'string' ? verified.claims.jti : `${verified.subject}@${String(verified.claims.iat)}`;
  const key = `${verified.issuer.issuer} ${jti}`;
  if (seen === undefined || seen.has(key)) return;
  if (seen.size >= MAX_SIGN_INS_REMEMBERED) seen.delete(seen.values().next().value as string);
  seen.add(key);
  const orgIds = principal.orgId !== null ? [principal.orgId] : (await deps.repository.access.listOrgsOf(principal.identity.identityId)).map((m) => m.orgId);
  for (const orgId of orgIds) {
    await audit(deps, {
      orgId,
      actorId: principal.identity.identityId,
      action: 'auth.login',
      target: principal.identity.identityId,
      details: { issuer: verified.issuer.issuer, clientId: verified.clientId, service: verified.service },
    });
  }
}

async function linkedIdentity(deps: AccessDeps, verified: VerifiedToken): Promise<Identity | null> {
  const orgId = verified.issuer.orgId;
  // An organization whose directory provisions its people (SCIM) decides who signs in through its
  // issuer: nobody it has not provisioned, nobody it deactivated.
  const directed = orgId !== null && !verified.service && (await deps.repository.access.getScimConfig(orgId)) !== null;
  if (directed && (await deps.repository.access.findLinkedIdentity(verified.issuer.issuer, verified.subject)) === null && (await provisionedIdentity(deps, verified)) === null) {
    return null;
  }
  const identity = await findOrCreateIdentity(deps, verified);
  if (identity !== null && orgId !== null) {
    const provisioned = await deps.repository.access.getScimUser(orgId, identity.identityId);
    if (provisioned !== null ? !provisioned.active : directed) return null;
  }
  return identity;
}

/**
 * The first token of a person from an organization's own issuer finds the user its directory
 * provisioned (SCIM userName = the token's email, preferred_username or upn) instead of making another.
 */
async function provisionedIdentity(deps: AccessDeps, verified: VerifiedToken): Promise<string | null> {
  const orgId = verified.issuer.orgId;
  if (orgId === null || verified.service) return null;
  const { claims } = verified;
  // An email the provider says it has not verified names nobody.
  const email = claims.email_verified === false ? undefined : claims.email;
  for (const name of [email, claims.preferred_username, claims.upn]) {
    if (typeof name !== 'string' || name === '') continue;
    const user = await deps.repository.access.findScimUserByUserName(orgId, name);
    if (user !== null) return user.identityId;
  }
  return null;
}

async function findOrCreateIdentity(deps: AccessDeps, verified: VerifiedToken): Promise<Identity | null> {
  const access = deps.repository.access;
  const { issuer, subject } = verified;
  const existing = await access.findLinkedIdentity(issuer.issuer, subject);
  if (existing !== null) return access.getIdentity(existing);
  const provisioned = await provisionedIdentity(deps, verified);
  if (provisioned !== null) {
    const link = { issuer: issuer.issuer, subject, identityId: provisioned, createdAt: isoTimestamp(deps.clock) };
    try {
      await access.applyAccessChanges([
        { kind: 'linkIdentity', link },
        auditChange(deps, { orgId: issuer.orgId!, actorId: provisioned, action: 'user.sso-link', target: provisioned, details: { identityId: provisioned, issuer: issuer.issuer } }),
      ]);
    } catch (error) {
      if (!isStrataError(error, 'IDENTITY_LINK_TAKEN')) throw error;
    }
    const winner = await access.findLinkedIdentity(issuer.issuer, subject);
    return winner === null ? null : access.getIdentity(winner);
  }
  const identity = newIdentity(deps, verified);
  const changes: AccessChange[] = [
    { kind: 'createIdentity', identity },
    { kind: 'linkIdentity', link: { issuer: issuer.issuer, subject, identityId: identity.identityId, createdAt: identity.createdAt } },
  ];
  if (issuer.orgId !== null && identity.kind === 'user') {
    changes.push(
      { kind: 'setOrgRole', membership: { orgId: issuer.orgId, identityId: identity.identityId, role: 'member' } },
      auditChange(deps, {
        orgId: issuer.orgId,
        actorId: identity.identityId,
        action: 'user.sso-join',
        target: identity.identityId,
        details: { identityId: identity.identityId, issuer: issuer.issuer, role: 'member' },
      }),
    );
  }
  try {
    await access.applyAccessChanges(changes);
    return identity;
  } catch (error) {
    // Two first requests of one person at once: the other one linked it; use that identity.
    if (!isStrataError(error, 'IDENTITY_LINK_TAKEN')) throw error;
    const winner = await access.findLinkedIdentity(issuer.issuer, subject);
    return winner === null ? null : access.getIdentity(winner);
  }
}

function newIdentity(deps: AccessDeps, verified: VerifiedToken): Identity {
  const { claims } = verified;
  const email = typeof claims.email === 'string' && claims.email_verified === true ? claims.email : null;
  const named = [claims.name, claims.preferred_username, email].find((value): value is string => typeof value === 'string' && value !== '');
  const fallback = verified.service ? `client ${verified.clientId}` : `${verified.subject} (${new URL(verified.issuer.issuer).host})`;
  return {
    identityId: deps.ids.uuid(),
    kind: verified.service ? 'service' : 'user',
    name: printableName(named) ?? printableName(fallback) ?? 'unnamed',
    email,
    createdAt: isoTimestamp(deps.clock),
  };
}

/** Names come from another system's claims: shown in history and tables, so printable and bounded. */
function printableName(name: string | undefined): string | null {
  if (name === undefined) return null;
  const trimmed = name.trim().slice(0, MAX_NAME_LENGTH);
  return trimmed === '' || unsafeCharacterReason(trimmed) !== null ? null : trimmed;
}
