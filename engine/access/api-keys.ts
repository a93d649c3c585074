// API key lifecycle: create, list, rotate, revoke. Each key authenticates as its own service identity
// (created with the key), whose organization role is what the creator asked for but never above the
// creator's own role, and whose project memberships copy the creator's narrowing — so a key can
// never do more than the person who made it could. The plaintext key exists only in the return value
// of create/rotate; it is shown once and never stored, logged or audited.

import { StrataError } from '../errors.js';
import type { AccessChange } from '../ports/metadata-repository.js';
import { isoTimestamp } from '../ports/world.js';
import { unsafeCharacterReason } from '../unsafe-text.js';
import type { ApiKeyRecord, OrgRole } from '../types.js';
import { formatApiKey, generateKeyMaterial, hmacSecret, isValidEnvironment } from './api-key-format.js';
import { auditChange } from './audit.js';
import { keyIsUsable } from './authenticate.js';
import { authorizeOrg, authorizeProject, callerRole, defaultOrgId } from './authorize.js';
import type { Principal } from './context.js';
import type { AccessDeps } from './deps.js';
import { lowerRole, roleAllows, roleAtLeast } from './roles.js';

export type ApiKeyStatus = 'active' | 'grace' | 'rotated' | 'revoked' | 'expired';

/** What clients see about a key: never the secret nor its HMAC. */
export interface ApiKeyMetadata extends Omit<ApiKeyRecord, 'secretHmac'> {
  role: OrgRole | null;
  status: ApiKeyStatus;
}

export interface IssuedApiKey {
  /** the plaintext key, `rk.<environment>.<keyId>.<secret>`: shown once */
  apiKey: string;
  key: ApiKeyMetadata;
}

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;
export const DEFAULT_ROTATION_GRACE_SECONDS = 86_400;

export interface IssueApiKeyInput {
  orgId: string;
  identityId: string;
  projectId: string | null;
  ownerId: string;
  purpose: string;
  expiresAt: string | null;
  rotateBy: string | null;
  /** a person's own key: acts as `identityId` with their role lowered to this */
  roleCap?: OrgRole | null;
}

/**
 * Mints a key for an identity: the plaintext and the record to store (with `createApiKey` in the
 * caller's change list). Writes nothing. No authorization: callers decide who may.
 */
export function mintApiKey(deps: AccessDeps, input: IssueApiKeyInput): { apiKey: string; record: ApiKeyRecord } {
  if (!isValidEnvironment(deps.environment)) throw new TypeError('environment must match [a-z0-9]{1,16}');
  const { keyId, secret } = generateKeyMaterial(deps.ids);
  const record: ApiKeyRecord = {
    keyId,
    environment: deps.environment,
    secretHmac: hmacSecret(deps.pepper, secret),
    identityId: input.identityId,
    orgId: input.orgId,
    projectId: input.projectId,
    ownerId: input.ownerId,
    purpose: input.purpose,
    createdAt: isoTimestamp(deps.clock),
    expiresAt: input.expiresAt,
    rotateBy: input.rotateBy,
    revokedAt: null,
    lastUsedAt: null,
    replacedBy: null,
    graceUntil: null,
    roleCap: input.roleCap ?? null,
  };
  return { apiKey: formatApiKey({ environment: deps.environment, keyId, secret }), record };
}

/** What a key may do: its service identity's role, or for a person's own key their role lowered to its cap. */
async function keyRole(deps: AccessDeps, record: ApiKeyRecord): Promise<OrgRole | null> {
  const role = await deps.repository.access.getOrgRole(record.orgId, record.identityId);
  return role === null || record.roleCap === null ? role : lowerRole(role, record.roleCap);
}

export async function keyMetadata(deps: AccessDeps, record: ApiKeyRecord): Promise<ApiKeyMetadata> {
  const { secretHmac: _omitted, ...rest } = record;
  const role = await keyRole(deps, record);
  const nowMs = deps.clock.now();
  let status: ApiKeyStatus = 'active';
  if (record.revokedAt !== null) status = 'revoked';
  else if (record.expiresAt !== null && Date.parse(record.expiresAt) <= nowMs) status = 'expired';
  else if (record.replacedBy !== null) status = keyIsUsable(record, record.environment, nowMs) ? 'grace' : 'rotated';
  return { ...rest, role, status };
}

export interface CreateApiKeyInput {
  purpose: string;
  orgId?: string;
  projectId?: string | null;
  role?: OrgRole;
  expiresInDays?: number;
  expiresInHours?: number;
  rotateInDays?: number;
  /** `self`: the key acts as its creator, role capped (default for a person); `service`: a new service identity */
  actAs?: 'self' | 'service';
}

export async function createApiKey(deps: AccessDeps, principal: Principal, input: CreateApiKeyInput): Promise<IssuedApiKey> {
  // The purpose names the key's identity in listings, history and audit: no character that hides or
  // reorders what an admin reads there.
  const unsafe = unsafeCharacterReason(input.purpose);
  if (unsafe !== null) throw new StrataError('INVALID_ARGUMENT', { message: `purpose ${unsafe}`, details: { field: 'purpose' } });
  const projectId = input.projectId ?? principal.projectScope;
  let orgId: string;
  let creatorRole: OrgRole;
  if (projectId !== null) {
    // A project-scoped caller gets 404 for any other project, so it can only mint keys for its own.
    const grant = await authorizeProject(deps, principal, projectId, 'write');
    if (input.orgId !== undefined && input.orgId !== grant.project.orgId) {
      throw new StrataError('PROJECT_NOT_FOUND', { details: { projectId } });
    }
    orgId = grant.project.orgId;
    creatorRole = grant.role;
  } else {
    orgId = input.orgId ?? (await defaultOrgId(deps, principal));
    creatorRole = (await authorizeOrg(deps, principal, orgId, 'write')).role;
  }
  const role = input.role ?? lowerRole('member', creatorRole);
  if (!roleAtLeast(creatorRole, role)) {
    throw new StrataError('FORBIDDEN', { message: 'A key cannot have a higher role than its creator', details: { field: 'role' } });
  }

  if (input.expiresInDays !== undefined && input.expiresInHours !== undefined) {
    throw new StrataError('INVALID_ARGUMENT', { message: 'Give expiresInDays or expiresInHours, not both', details: { field: 'expiresInHours' } });
  }
  const now = deps.clock.now();
  const lifetimeMs = input.expiresInHours !== undefined ? input.expiresInHours * HOUR_MS : input.expiresInDays !== undefined ? input.expiresInDays * DAY_MS : null;
  // A person's key acts as the person (history names them; their project narrowing applies as it
  // changes); a service key gets an identity of its own, with a copy of the creator's narrowing.
  const actsAsSelf = (input.actAs ?? (principal.identity.kind === 'user' ? 'self' : 'service')) === 'self';
  const identityId = actsAsSelf ? principal.identity.identityId : deps.ids.uuid();
  const { apiKey, record } = mintApiKey(deps, {
    orgId,
    identityId,
    projectId,
    ownerId: principal.identity.identityId,
    purpose: input.purpose,
    expiresAt: lifetimeMs === null ? null : new Date(now + lifetimeMs).toISOString(),
    rotateBy: input.rotateInDays === undefined ? null : new Date(now + input.rotateInDays * DAY_MS).toISOString(),
    roleCap: actsAsSelf ? role : null,
  });
  const serviceIdentity: AccessChange[] = actsAsSelf
    ? []
    : [
        { kind: 'createIdentity', identity: { identityId, kind: 'service', name: input.purpose, email: null, createdAt: new Date(now).toISOString() } },
        { kind: 'setOrgRole', membership: { orgId, identityId, role } },
        ...(await copyNarrowing(deps, principal.identity.identityId, identityId, orgId, projectId)),
      ];
  // The service identity, its role and narrowing, the key and the audit record: one transaction, so
  // a crash or a failure half-way leaves no identity without a key and no unaudited key.
  await deps.repository.access.applyAccessChanges([
    ...serviceIdentity,
    { kind: 'createApiKey', key: record },
    auditChange(deps, {
      orgId,
      actorId: principal.identity.identityId,
      action: 'key.create',
      target: record.keyId,
      details: { keyId: record.keyId, identityId, actsAs: actsAsSelf ? 'self' : 'service', projectId, role, purpose: input.purpose, expiresAt: record.expiresAt },
    }),
  ]);
  return { apiKey, key: await keyMetadata(deps, record) };
}

/** The creator's project narrowing applies to the key too (for its one project, or all of the org's). */
async function copyNarrowing(deps: AccessDeps, from: string, to: string, orgId: string, projectId: string | null): Promise<AccessChange[]> {
  const access = deps.repository.access;
  const projectIds = projectId !== null ? [projectId] : (await deps.repository.projects.list(orgId)).map((p) => p.projectId);
  const changes: AccessChange[] = [];
  for (const id of projectIds) {
    const narrowed = await access.getProjectAccess(id, from);
    if (narrowed !== null) changes.push({ kind: 'setProjectAccess', membership: { projectId: id, identityId: to, access: narrowed } });
  }
  return changes;
}

export async function listApiKeys(deps: AccessDeps, principal: Principal, input: { orgId?: string }): Promise<ApiKeyMetadata[]> {
  const orgId = input.orgId ?? (await defaultOrgId(deps, principal));
  const grant = await authorizeOrg(deps, principal, orgId, 'read', { allowProjectScoped: true });
  const seesAll = principal.projectScope === null && roleAllows(grant.role, 'manage');
  const me = principal.identity.identityId;
  const records = await deps.repository.access.listApiKeys(orgId);
  const visible = records.filter((r) => seesAll || r.ownerId === me || r.identityId === me);
  return Promise.all(visible.map((r) => keyMetadata(deps, r)));
}

/**
 * A key can be administered by its owner, by itself (self-rotation from CI) and by org admins; for
 * anyone else it does not exist (404). Seeing a key is not enough to act on it: nobody may rotate or
 * revoke a key whose role is above their own (403), and a rotation hands the new secret only to the
 * key itself, its owner of record or an organization owner — an admin who could rotate an owner's key
 * and keep the new secret would be an owner (issue 13: it promoted itself and revoked the bootstrap key).
 */
async function administrableKey(deps: AccessDeps, principal: Principal, keyId: string, action: 'rotate' | 'revoke'): Promise<ApiKeyRecord> {
  const notFound = new StrataError('KEY_NOT_FOUND', { details: { keyId } });
  const record = await deps.repository.access.getApiKey(keyId);
  if (record === null) throw notFound;
  if (principal.orgId !== null && principal.orgId !== record.orgId) throw notFound;
  const me = principal.identity.identityId;
  const role = await callerRole(deps, principal, record.orgId);
  if (role === null) throw notFound;
  const itself = record.identityId === me;
  const mine = record.ownerId === me || itself;
  if (principal.projectScope !== null) {
    if (record.projectId !== principal.projectScope || !mine) throw notFound;
  } else if (!mine && !roleAllows(role, 'manage')) {
    throw notFound;
  }
  if (itself) return record;
  const theirs = await keyRole(deps, record);
  if (theirs !== null && !roleAtLeast(role, theirs)) {
    throw new StrataError('FORBIDDEN', { message: `This key has the ${theirs} role, above yours (${role}): you cannot ${action} it`, details: { keyId } });
  }
  if (action === 'rotate' && record.ownerId !== me && role !== 'owner') {
    throw new StrataError('FORBIDDEN', {
      message: "A rotated key's new secret goes only to the key itself, its owner or an organization owner: revoke it instead",
      details: { keyId },
    });
  }
  return record;
}

export async function rotateApiKey(
  deps: AccessDeps,
  principal: Principal,
  keyId: string,
  options: { graceSeconds?: number } = {},
): Promise<IssuedApiKey & { replaced: ApiKeyMetadata }> {
  const old = await administrableKey(deps, principal, keyId, 'rotate');
  if (old.revokedAt !== null) throw new StrataError('KEY_REVOKED', { details: { keyId } });
  if (old.replacedBy !== null) throw new StrataError('KEY_ROTATED', { details: { keyId, replacedBy: old.replacedBy } });
  const now = deps.clock.now();
  // The new key keeps the old one's lifetime and rotation period, counted from now.
  const shift = (end: string | null) => (end === null ? null : new Date(now + (Date.parse(end) - Date.parse(old.createdAt))).toISOString());
  const { apiKey, record } = mintApiKey(deps, {
    orgId: old.orgId,
    identityId: old.identityId,
    projectId: old.projectId,
    ownerId: old.ownerId,
    purpose: old.purpose,
    expiresAt: shift(old.expiresAt),
    rotateBy: shift(old.rotateBy),
    roleCap: old.roleCap,
  });
  const graceUntil = new Date(now + (options.graceSeconds ?? DEFAULT_ROTATION_GRACE_SECONDS) * 1000).toISOString();
  // The guard re-reads the old key inside the transaction: of two concurrent rotations one wins and
  // the other gets KEY_ROTATED, instead of two live successors.
  await deps.repository.access.applyAccessChanges([
    { kind: 'requireKeyActive', keyId: old.keyId },
    { kind: 'createApiKey', key: record },
    { kind: 'updateApiKey', keyId: old.keyId, patch: { replacedBy: record.keyId, graceUntil } },
    auditChange(deps, {
      orgId: old.orgId,
      actorId: principal.identity.identityId,
      action: 'key.rotate',
      target: old.keyId,
      details: { keyId: old.keyId, newKeyId: record.keyId, graceUntil },
    }),
  ]);
  const replaced = await keyMetadata(deps, { ...old, replacedBy: record.keyId, graceUntil });
  return { apiKey, key: await keyMetadata(deps, record), replaced };
}

/**
 * The changes that revoke a key. A key without a role cap acts as a service identity of its own, the
 * only kind of key that can open a browser session (control-api/routes/ui.ts): the sessions it opened
 * end with it, or they would keep its access for the rest of their working day.
 */
export function keyRevocation(record: ApiKeyRecord, revokedAt: string): AccessChange[] {
  return [
    { kind: 'updateApiKey', keyId: record.keyId, patch: { revokedAt } },
    ...(record.roleCap === null ? [{ kind: 'revokeWebSessions' as const, at: revokedAt, identityId: record.identityId }] : []),
  ];
}

export async function revokeApiKey(deps: AccessDeps, principal: Principal, keyId: string): Promise<ApiKeyMetadata> {
  const record = await administrableKey(deps, principal, keyId, 'revoke');
  if (record.revokedAt !== null) throw new StrataError('KEY_REVOKED', { details: { keyId } });
  const revokedAt = isoTimestamp(deps.clock);
  await deps.repository.access.applyAccessChanges([
    { kind: 'requireKeyActive', keyId, allowReplaced: true },
    ...keyRevocation(record, revokedAt),
    auditChange(deps, { orgId: record.orgId, actorId: principal.identity.identityId, action: 'key.revoke', target: keyId, details: { keyId } }),
  ]);
  return keyMetadata(deps, { ...record, revokedAt });
}
