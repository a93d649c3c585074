// SCIM Users and Groups of one organization (RFC 7643/7644), as Okta and Microsoft Entra send them.
//
// A provisioned user is an identity (kind `user`, its SCIM id) and a member of the organization while
// active, with the role its groups map to (or the default role). Deactivating (`active: false`) or
// deleting a user removes the membership and revokes their API keys in the same transaction as the
// change itself, and their sign-ins through the organization's SSO issuer stop (sign-in.ts). An
// owner's role is never changed by the directory.

import { StrataError } from '../../errors.js';
import type { AccessChange } from '../../ports/metadata-repository.js';
import { isoTimestamp } from '../../ports/world.js';
import type { OrgRole, ScimConfig, ScimGroup, ScimUser } from '../../types.js';
import { unsafeCharacterReason } from '../../unsafe-text.js';
import { auditChange } from '../audit.js';
import type { AccessDeps } from '../deps.js';
import type { ProvisionedRole } from './config.js';
import { field, matches, parseFilter } from './filter.js';
import { applyPatch, type Resource } from './patch.js';

export const USER_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:User';
export const GROUP_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:Group';
export const LIST_SCHEMA = 'urn:ietf:params:scim:api:messages:2.0:ListResponse';
const MAX_ATTRIBUTES_BYTES = 64 * 1024;
const MAX_PAGE = 200;
/** Attributes the server owns or never keeps (`password`: Strata has none to set). */
const RESERVED = new Set(['schemas', 'id', 'meta', 'username', 'externalid', 'active', 'groups', 'password', 'members', 'displayname']);

export interface ScimContext {
  deps: AccessDeps;
  config: ScimConfig;
  /** `https://host/scim/v2`, for meta.location */
  baseUrl: string;
}

export interface ListQuery {
  filter?: string;
  startIndex?: number;
  count?: number;
}

const RANK: Record<ProvisionedRole, number> = { viewer: 1, member: 2, admin: 3 };

function badValue(reason: string): StrataError {
  return new StrataError('SCIM_INVALID_VALUE', { details: { reason } });
}

function text(value: unknown, name: string, max = 256): string {
  if (typeof value !== 'string' || value.trim() === '' || value.length > max) throw badValue(`${name} must be a non-empty string of at most ${max} characters`);
  const unsafe = unsafeCharacterReason(value);
  if (unsafe !== null) throw badValue(`${name} ${unsafe}`);
  return value;
}

function optionalText(value: unknown, name: string): string | null {
  return value === undefined || value === null ? null : text(value, name);
}

function asBoolean(value: unknown): boolean {
  if (typeof value === 'boolean') return value;
  if (typeof value === 'string' && /^(true|false)$/i.test(value)) return value.toLowerCase() === 'true';
  throw badValue('active must be a boolean');
}

/** The role a user gets: highest of their mapped groups, else the default; none while inactive. */
function targetRole(config: ScimConfig, active: boolean, groupNames: string[]): ProvisionedRole | null {
  if (!active) return null;
  let best: ProvisionedRole | null = null;
  for (const name of groupNames) {
    const mapped = Object.entries(config.groupRoles).find(([group]) => group.toLowerCase() === name.toLowerCase())?.[1];
    if (mapped !== undefined && (best === null || RANK[mapped] > RANK[best])) best = mapped;
  }
  return best ?? config.defaultRole;
}

/** Membership and key changes that make `identityId`'s access match the directory's new state. */
async function accessChanges(ctx: ScimContext, identityId: string, active: boolean, groupNames: string[], wasActive: boolean): Promise<AccessChange[]> {
  const { deps, config } = ctx;
  const access = deps.repository.access;
  const current: OrgRole | null = await access.getOrgRole(config.orgId, identityId);
  const changes: AccessChange[] = [];
  if (current !== 'owner') {
    const target = targetRole(config, active, groupNames);
    if (target === null && current !== null) changes.push({ kind: 'removeOrgMember', orgId: config.orgId, identityId });
    if (target !== null && target !== current) changes.push({ kind: 'setOrgRole', membership: { orgId: config.orgId, identityId, role: target } });
  }
  if (wasActive && !active) {
    const revokedAt = isoTimestamp(deps.clock);
    changes.push({ kind: 'revokeWebSessions', at: revokedAt, identityId });
    for (const key of await access.listApiKeys(config.orgId)) {
      if (key.revokedAt === null && (key.ownerId === identityId || key.identityId === identityId)) {
        changes.push({ kind: 'updateApiKey', keyId: key.keyId, patch: { revokedAt } });
      }
    }
  }
  return changes;
}

function audit(ctx: ScimContext, action: string, target: string, details: Record<string, string | number | boolean | null>) {
  return auditChange(ctx.deps, { orgId: ctx.config.orgId, actorId: `scim:${ctx.config.tokenId}`, action, target, details });
}

function meta(ctx: ScimContext, kind: 'User' | 'Group', id: string, created: string, updated: string, version: number) {
  return { resourceType: kind, created, lastModified: updated, version: `W/"${version}"`, location: `${ctx.baseUrl}/${kind}s/${id}` };
}

// --- users -----------------------------------------------------------------------------------------

export async function userResource(ctx: ScimContext, user: ScimUser): Promise<Resource> {
  const groups = await ctx.deps.repository.access.listScimGroupsOf(ctx.config.orgId, user.identityId);
  const extensions = Object.keys(user.attributes).filter((key) => key.startsWith('urn:'));
  return {
    schemas: [USER_SCHEMA, ...extensions],
    id: user.identityId,
    ...(user.externalId === null ? {} : { externalId: user.externalId }),
    userName: user.userName,
    active: user.active,
    ...user.attributes,
    groups: groups.map((g) => ({ value: g.groupId, display: g.displayName, $ref: `${ctx.baseUrl}/Groups/${g.groupId}` })),
    meta: meta(ctx, 'User', user.identityId, user.createdAt, user.updatedAt, user.version),
  };
}

/** The attributes Strata keeps as the directory sent them. */
function keptAttributes(body: Resource): Resource {
  const kept = Object.fromEntries(Object.entries(body).filter(([key]) => !RESERVED.has(key.toLowerCase())));
  const displayName = field(body, 'displayName');
  if (typeof displayName === 'string') kept['displayName'] = displayName;
  if (Buffer.byteLength(JSON.stringify(kept)) > MAX_ATTRIBUTES_BYTES) throw badValue('the user is larger than 64 KiB');
  return kept;
}

/** The name and email Strata shows for the person (history, member lists). */
function personOf(userName: string, attributes: Resource): { name: string; email: string | null } {
  const name = field(attributes, 'name') as Resource | undefined;
  const formatted = typeof name?.['formatted'] === 'string' ? name['formatted'] : null;
  const joined = [name?.['givenName'], name?.['familyName']].filter((part): part is string => typeof part === 'string' && part !== '').join(' ');
  const display = field(attributes, 'displayName');
  const emails = (field(attributes, 'emails') as Array<Record<string, unknown>> | undefined) ?? [];
  const primary = emails.find((e) => e['primary'] === true) ?? emails[0];
  const email = typeof primary?.['value'] === 'string' ? primary['value'] : /^[^@\s]+@[^@\s]+$/.test(userName) ? userName : null;
  const shown = [typeof display === 'string' ? display : null, formatted, joined, userName].find((candidate) => candidate !== null && candidate.trim() !== '' && unsafeCharacterReason(candidate) === null);
  return { name: (shown ?? userName).slice(0, 200), email };
}

function parseUser(body: unknown): { userName: string; externalId: string | null; active: boolean; attributes: Resource } {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) throw badValue('the body must be a SCIM User');
  const resource = body as Resource;
  const active = field(resource, 'active');
  return {
    userName: text(field(resource, 'userName'), 'userName'),
    externalId: optionalText(field(resource, 'externalId'), 'externalId'),
    active: active === undefined ? true : asBoolean(active),
    attributes: keptAttributes(resource),
  };
}

async function loadUser(ctx: ScimContext, id: string): Promise<ScimUser> {
  const user = await ctx.deps.repository.access.getScimUser(ctx.config.orgId, id);
  if (user === null) throw new StrataError('SCIM_USER_NOT_FOUND', { details: { id } });
  return user;
}

export async function getUser(ctx: ScimContext, id: string): Promise<Resource> {
  return userResource(ctx, await loadUser(ctx, id));
}

export async function listUsers(ctx: ScimContext, query: ListQuery): Promise<Resource> {
  const comparisons = query.filter === undefined ? [] : parseFilter(query.filter);
  const access = ctx.deps.repository.access;
  // `userName eq "…"` (what both directories ask before every create) is one index lookup.
  const only = comparisons.length === 1 && comparisons[0]!.path.length === 1 && comparisons[0]!.path[0]!.toLowerCase() === 'username' && typeof comparisons[0]!.value === 'string';
  const candidates = only
    ? [await access.findScimUserByUserName(ctx.config.orgId, comparisons[0]!.value as string)].filter((u): u is ScimUser => u !== null)
    : await access.listScimUsers(ctx.config.orgId);
  const resources: Resource[] = [];
  for (const user of candidates) {
    const resource = await userResource(ctx, user);
    if (matches(resource, comparisons)) resources.push(resource);
  }
  return page(resources, query);
}

export async function createUser(ctx: ScimContext, body: unknown): Promise<Resource> {
  const parsed = parseUser(body);
  const { deps, config } = ctx;
  if ((await deps.repository.access.findScimUserByUserName(config.orgId, parsed.userName)) !== null) {
    throw new StrataError('SCIM_USERNAME_TAKEN', { details: { userName: parsed.userName } });
  }
  const now = isoTimestamp(deps.clock);
  const person = personOf(parsed.userName, parsed.attributes);
  // Someone who signed in before the directory provisioned them is that user, not a second one:
  // otherwise deactivating the provisioned user would leave their own sign-in working.
  const existing = await memberWithEmail(ctx, [parsed.userName, person.email]);
  const identityId = existing ?? deps.ids.uuid();
  const user: ScimUser = { orgId: config.orgId, identityId, ...parsed, createdAt: now, updatedAt: now, version: 1 };
  await deps.repository.access.applyAccessChanges([
    existing === null
      ? { kind: 'createIdentity', identity: { identityId, kind: 'user', name: person.name, email: person.email, createdAt: now } }
      : { kind: 'setIdentityProfile', identityId, name: person.name, email: person.email },
    { kind: 'putScimUser', user },
    ...(await accessChanges(ctx, identityId, user.active, [], false)),
    audit(ctx, 'scim.user.create', identityId, { identityId, userName: user.userName, active: user.active, adopted: existing !== null }),
  ]);
  return userResource(ctx, user);
}

/** A person already in the organization (not provisioned yet) whose email is one of `emails`. */
async function memberWithEmail(ctx: ScimContext, emails: Array<string | null>): Promise<string | null> {
  const wanted = new Set(emails.filter((e): e is string => e?.includes('@') === true).map((e) => e.toLowerCase()));
  if (wanted.size === 0) return null;
  const access = ctx.deps.repository.access;
  for (const member of await access.listOrgMembers(ctx.config.orgId)) {
    const identity = await access.getIdentity(member.identityId);
    if (identity?.kind !== 'user' || identity.email === null || !wanted.has(identity.email.toLowerCase())) continue;
    if ((await access.getScimUser(ctx.config.orgId, identity.identityId)) === null) return identity.identityId;
  }
  return null;
}

async function writeUser(ctx: ScimContext, old: ScimUser, next: Omit<ScimUser, 'orgId' | 'identityId' | 'createdAt' | 'updatedAt' | 'version'>, action: string): Promise<Resource> {
  const { deps, config } = ctx;
  const user: ScimUser = { ...old, ...next, updatedAt: isoTimestamp(deps.clock), version: old.version + 1 };
  const groups = await deps.repository.access.listScimGroupsOf(config.orgId, old.identityId);
  const person = personOf(user.userName, user.attributes);
  await deps.repository.access.applyAccessChanges([
    { kind: 'requireScimVersion', orgId: config.orgId, resource: 'user', id: old.identityId, version: old.version },
    { kind: 'putScimUser', user },
    { kind: 'setIdentityProfile', identityId: old.identityId, name: person.name, email: person.email },
    ...(await accessChanges(ctx, old.identityId, user.active, groups.map((g) => g.displayName), old.active)),
    audit(ctx, old.active && !user.active ? 'scim.user.deactivate' : action, old.identityId, { identityId: old.identityId, userName: user.userName, active: user.active }),
  ]);
  return userResource(ctx, user);
}

export async function replaceUser(ctx: ScimContext, id: string, body: unknown): Promise<Resource> {
  const old = await loadUser(ctx, id);
  return writeUser(ctx, old, parseUser(body), 'scim.user.replace');
}

export async function patchUser(ctx: ScimContext, id: string, body: unknown): Promise<Resource> {
  const old = await loadUser(ctx, id);
  const current: Resource = { ...old.attributes, userName: old.userName, active: old.active, ...(old.externalId === null ? {} : { externalId: old.externalId }) };
  return writeUser(ctx, old, parseUser(applyPatch(current, body)), 'scim.user.update');
}

export async function deleteUser(ctx: ScimContext, id: string): Promise<void> {
  const old = await loadUser(ctx, id);
  const { deps, config } = ctx;
  await deps.repository.access.applyAccessChanges([
    { kind: 'deleteScimUser', orgId: config.orgId, identityId: id },
    ...(await accessChanges(ctx, id, false, [], old.active)),
    audit(ctx, 'scim.user.delete', id, { identityId: id, userName: old.userName }),
  ]);
}

// --- groups ----------------------------------------------------------------------------------------

export async function groupResource(ctx: ScimContext, group: ScimGroup, options: { members?: boolean } = {}): Promise<Resource> {
  const access = ctx.deps.repository.access;
  const members: Resource[] = [];
  if (options.members !== false) {
    for (const id of group.members) {
      const user = await access.getScimUser(ctx.config.orgId, id);
      members.push({ value: id, display: user?.userName ?? id, $ref: `${ctx.baseUrl}/Users/${id}` });
    }
  }
  return {
    schemas: [GROUP_SCHEMA],
    id: group.groupId,
    ...(group.externalId === null ? {} : { externalId: group.externalId }),
    displayName: group.displayName,
    ...(options.members === false ? {} : { members }),
    meta: meta(ctx, 'Group', group.groupId, group.createdAt, group.updatedAt, group.version),
  };
}

async function parseGroup(ctx: ScimContext, body: unknown): Promise<{ displayName: string; externalId: string | null; members: string[] }> {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) throw badValue('the body must be a SCIM Group');
  const resource = body as Resource;
  const raw = field(resource, 'members') ?? [];
  if (!Array.isArray(raw)) throw badValue('members must be an array');
  const members: string[] = [];
  for (const member of raw) {
    const value = member !== null && typeof member === 'object' ? field(member as Resource, 'value') : undefined;
    if (typeof value !== 'string') throw badValue('every member needs a value (a user id)');
    // Only users this directory provisioned in this organization can be members.
    if ((await ctx.deps.repository.access.getScimUser(ctx.config.orgId, value)) === null) throw badValue(`member ${value} is not a user of this directory`);
    if (!members.includes(value)) members.push(value);
  }
  return { displayName: text(field(resource, 'displayName'), 'displayName'), externalId: optionalText(field(resource, 'externalId'), 'externalId'), members };
}

async function loadGroup(ctx: ScimContext, id: string): Promise<ScimGroup> {
  const group = await ctx.deps.repository.access.getScimGroup(ctx.config.orgId, id);
  if (group === null) throw new StrataError('SCIM_GROUP_NOT_FOUND', { details: { id } });
  return group;
}

export async function getGroup(ctx: ScimContext, id: string, options: { members?: boolean } = {}): Promise<Resource> {
  return groupResource(ctx, await loadGroup(ctx, id), options);
}

export async function listGroups(ctx: ScimContext, query: ListQuery & { members?: boolean }): Promise<Resource> {
  const comparisons = query.filter === undefined ? [] : parseFilter(query.filter);
  const resources: Resource[] = [];
  for (const group of await ctx.deps.repository.access.listScimGroups(ctx.config.orgId)) {
    const resource = await groupResource(ctx, group, { members: true });
    if (!matches(resource, comparisons)) continue;
    if (query.members === false) delete resource['members'];
    resources.push(resource);
  }
  return page(resources, query);
}

/** Role changes of everyone whose groups change when `before` becomes `after` (null: created/deleted). */
async function groupAccessChanges(ctx: ScimContext, before: ScimGroup | null, after: ScimGroup | null): Promise<AccessChange[]> {
  const access = ctx.deps.repository.access;
  const affected = new Set([...(before?.members ?? []), ...(after?.members ?? [])]);
  const changes: AccessChange[] = [];
  for (const identityId of affected) {
    const user = await access.getScimUser(ctx.config.orgId, identityId);
    if (user === null) continue;
    const groups = (await access.listScimGroupsOf(ctx.config.orgId, identityId)).filter((g) => g.groupId !== (before ?? after)!.groupId);
    const names = groups.map((g) => g.displayName);
    if (after?.members.includes(identityId)) names.push(after.displayName);
    changes.push(...(await accessChanges(ctx, identityId, user.active, names, user.active)));
  }
  return changes;
}

export async function createGroup(ctx: ScimContext, body: unknown): Promise<Resource> {
  const parsed = await parseGroup(ctx, body);
  const { deps, config } = ctx;
  const now = isoTimestamp(deps.clock);
  const group: ScimGroup = { orgId: config.orgId, groupId: deps.ids.uuid(), ...parsed, createdAt: now, updatedAt: now, version: 1 };
  await deps.repository.access.applyAccessChanges([
    { kind: 'putScimGroup', group },
    ...(await groupAccessChanges(ctx, null, group)),
    audit(ctx, 'scim.group.create', group.groupId, { groupId: group.groupId, displayName: group.displayName, members: group.members.length }),
  ]);
  return groupResource(ctx, group);
}

async function writeGroup(ctx: ScimContext, old: ScimGroup, next: { displayName: string; externalId: string | null; members: string[] }, action: string): Promise<Resource> {
  const { deps, config } = ctx;
  const group: ScimGroup = { ...old, ...next, updatedAt: isoTimestamp(deps.clock), version: old.version + 1 };
  await deps.repository.access.applyAccessChanges([
    { kind: 'requireScimVersion', orgId: config.orgId, resource: 'group', id: old.groupId, version: old.version },
    { kind: 'putScimGroup', group },
    ...(await groupAccessChanges(ctx, old, group)),
    audit(ctx, action, old.groupId, { groupId: old.groupId, displayName: group.displayName, members: group.members.length }),
  ]);
  return groupResource(ctx, group);
}

export async function replaceGroup(ctx: ScimContext, id: string, body: unknown): Promise<Resource> {
  const old = await loadGroup(ctx, id);
  return writeGroup(ctx, old, await parseGroup(ctx, body), 'scim.group.replace');
}

export async function patchGroup(ctx: ScimContext, id: string, body: unknown): Promise<Resource> {
  const old = await loadGroup(ctx, id);
  const current: Resource = { displayName: old.displayName, members: old.members.map((value) => ({ value })), ...(old.externalId === null ? {} : { externalId: old.externalId }) };
  return writeGroup(ctx, old, await parseGroup(ctx, applyPatch(current, body)), 'scim.group.update');
}

export async function deleteGroup(ctx: ScimContext, id: string): Promise<void> {
  const old = await loadGroup(ctx, id);
  await ctx.deps.repository.access.applyAccessChanges([
    { kind: 'deleteScimGroup', orgId: ctx.config.orgId, groupId: id },
    ...(await groupAccessChanges(ctx, old, null)),
    audit(ctx, 'scim.group.delete', id, { groupId: id, displayName: old.displayName }),
  ]);
}

function page(resources: Resource[], query: ListQuery): Resource {
  const startIndex = Math.max(1, query.startIndex ?? 1);
  const count = Math.min(MAX_PAGE, Math.max(0, query.count ?? 100));
  const slice = resources.slice(startIndex - 1, startIndex - 1 + count);
  return { schemas: [LIST_SCHEMA], totalResults: resources.length, startIndex, itemsPerPage: slice.length, Resources: slice };
}
