import { StrataError } from '../errors.js';
import type { Identity } from '../types.js';
import { unsafeCharacterReason } from '../unsafe-text.js';
import { mintApiKey } from './api-keys.js';
import { auditChange } from './audit.js';
import type { AccessDeps } from './deps.js';

export interface BootstrapResult {
  /** plaintext owner key: shown once */
  apiKey: string;
  orgId: string;
  keyId: string;
  identityId: string;
}

/**
 * First start of a deployment: the first organization, an owner service identity and its API key.
 * Refused (ALREADY_BOOTSTRAPPED) once any organization exists, so a second run cannot mint a new
 * owner key for an existing installation.
 */
export async function bootstrapOrganization(
  deps: AccessDeps,
  input: { orgName?: string; ownerName?: string } = {},
): Promise<BootstrapResult> {
  if ((await deps.repository.access.listOrganizations()).length > 0) throw new StrataError('ALREADY_BOOTSTRAPPED');
  return createOrganizationWithOwner(deps, input, { first: true });
}

/**
 * Another organization on a deployment (the operator's `strata admin org create`): the same as the
 * first — an owner service identity and its key, shown once — without the first-run guard.
 */
export async function createOrganizationWithOwner(
  deps: AccessDeps,
  input: { orgName?: string; ownerName?: string },
  options: { first: boolean } = { first: false },
): Promise<BootstrapResult> {
  const name = input.orgName ?? 'local';
  const unsafe = unsafeCharacterReason(name);
  if (name.trim() === '' || name.length > 200 || unsafe !== null) {
    throw new StrataError('INVALID_ARGUMENT', { message: `organization name ${unsafe ?? 'must be 1 to 200 characters'}`, details: { field: 'name' } });
  }
  const createdAt = new Date(deps.clock.now()).toISOString();
  const orgId = deps.ids.uuid();
  const identity: Identity = { identityId: deps.ids.uuid(), kind: 'service', name: input.ownerName ?? 'local owner', email: null, createdAt };
  const { apiKey, record } = mintApiKey(deps, {
    orgId,
    identityId: identity.identityId,
    projectId: null,
    ownerId: identity.identityId,
    purpose: 'bootstrap owner key',
    expiresAt: null,
    rotateBy: null,
  });
  // One transaction, its guard re-checked inside it: two bootstraps racing make one organization,
  // and a crash leaves either nothing or a complete organization with its owner key.
  await deps.repository.access.applyAccessChanges([
    ...(options.first ? [{ kind: 'requireNoOrganization' as const }] : []),
    { kind: 'createOrganization', org: { orgId, name, createdAt } },
    { kind: 'createIdentity', identity },
    { kind: 'setOrgRole', membership: { orgId, identityId: identity.identityId, role: 'owner' } },
    { kind: 'createApiKey', key: record },
    auditChange(deps, { orgId, actorId: identity.identityId, action: 'org.create', target: orgId, details: { orgId } }),
    auditChange(deps, {
      orgId,
      actorId: identity.identityId,
      action: 'key.create',
      target: record.keyId,
      details: { keyId: record.keyId, identityId: identity.identityId, projectId: null, role: 'owner', purpose: record.purpose, expiresAt: null },
    }),
  ]);
  return { apiKey, orgId, keyId: record.keyId, identityId: identity.identityId };
}
