// The daemon's local owner: an owner-role service identity of the home's organization and its API key
// in `<home>/secrets/local-owner.key` (0600). The CLI reads that file to talk to the daemon, so a user
// never copies a key by hand. A fresh home is bootstrapped; a home that already has an organization
// (someone ran `strata admin bootstrap`) gets a second owner identity for the daemon.

import { readFile } from 'node:fs/promises';
import { userInfo } from 'node:os';
import { parseApiKey, secretMatches } from '../engine/access/api-key-format.js';
import { mintApiKey } from '../engine/access/api-keys.js';
import { auditChange } from '../engine/access/audit.js';
import { bootstrapOrganization } from '../engine/access/bootstrap.js';
import type { AccessDeps } from '../engine/access/deps.js';
import { StrataError } from '../engine/errors.js';
import type { Actor } from '../engine/types.js';
import { writeSecretFileOnce } from '../server/secrets.js';
import { daemonLayout } from './config.js';

export interface LocalOwner {
  apiKey: string;
  orgId: string;
  identityId: string;
  /** who captured versions are attributed to */
  actor: Actor;
}

function actorFor(identityId: string): Actor {
  let name = 'local';
  try {
    name = userInfo().username;
  } catch {
    // no passwd entry (containers): keep 'local'
  }
  return { id: identityId, kind: 'local', name };
}

async function fromKey(deps: AccessDeps, apiKey: string, file: string): Promise<LocalOwner | null> {
  const parsed = parseApiKey(apiKey.trim());
  if (parsed === null || parsed.environment !== deps.environment) return null;
  const record = await deps.repository.access.getApiKey(parsed.keyId);
  if (record === null || record.revokedAt !== null) return null;
  // The key is the home's, but under another pepper every request with it would be refused
  // (UNAUTHENTICATED, "sign in with strata login") while the daemon ran on as if nothing were wrong.
  // A setting to put right, as loadPepper's own refusals are (not a sign-in problem).
  if (!secretMatches(deps.pepper, parsed.secret, record.secretHmac)) {
    throw new StrataError('INVALID_ARGUMENT', {
      message:
        `the local owner key does not match this home's pepper: the pepper changed since the key was made (STRATA_PEPPER or STRATA_PEPPER_FILE set then and not now, or the reverse, or secrets/pepper replaced); start with the pepper the home had, or remove ${file} to mint a new one (keys made under the old pepper stay refused)`,
      details: { field: 'pepper', file },
    });
  }
  return { apiKey: apiKey.trim(), orgId: record.orgId, identityId: record.identityId, actor: actorFor(record.identityId) };
}

/** Reads the local owner key, creating the organization, identity and key on first start. */
export async function ensureLocalOwner(home: string, deps: AccessDeps): Promise<LocalOwner> {
  const file = daemonLayout(home).ownerKey;
  const existing = await readFile(file, 'utf8').catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'ENOENT') return null;
    throw error;
  });
  if (existing !== null) {
    const owner = await fromKey(deps, existing, file);
    if (owner) return owner;
    throw new StrataError('UNAUTHENTICATED', {
      message: `${file} holds a key this home does not accept (revoked, or from another environment); remove the file to mint a new one`,
      details: { file },
    });
  }
  const organizations = await deps.repository.access.listOrganizations();
  let apiKey: string;
  if (organizations.length === 0) {
    apiKey = (await bootstrapOrganization(deps, { orgName: 'local', ownerName: 'local daemon' })).apiKey;
  } else {
    const orgId = organizations[0]!.orgId;
    const createdAt = new Date(deps.clock.now()).toISOString();
    const identityId = deps.ids.uuid();
    const issued = mintApiKey(deps, {
      orgId,
      identityId,
      projectId: null,
      ownerId: identityId,
      purpose: 'local daemon owner key',
      expiresAt: null,
      rotateBy: null,
    });
    await deps.repository.access.applyAccessChanges([
      { kind: 'createIdentity', identity: { identityId, kind: 'service', name: 'local daemon', email: null, createdAt } },
      { kind: 'setOrgRole', membership: { orgId, identityId, role: 'owner' } },
      { kind: 'createApiKey', key: issued.record },
      auditChange(deps, { orgId, actorId: identityId, action: 'key.create', target: issued.record.keyId, details: { keyId: issued.record.keyId, purpose: 'local daemon owner key' } }),
    ]);
    apiKey = issued.apiKey;
  }
  // Two first starts racing: both minted a key, the file keeps the first; use whatever it holds.
  const stored = (await writeSecretFileOnce(file, Buffer.from(`${apiKey}\n`))).toString('utf8');
  const owner = await fromKey(deps, stored, file);
  if (!owner) throw new StrataError('INTERNAL', { message: `the key in ${file} does not authenticate` });
  return owner;
}
