import { randomBytes } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { authorizeOrg, authorizeProject, visibleProjects } from '../engine/access/authorize.js';
import { bootstrapOrganization } from '../engine/access/bootstrap.js';
import { authenticateApiKey } from '../engine/access/authenticate.js';
import type { Principal } from '../engine/access/context.js';
import type { AccessDeps } from '../engine/access/deps.js';
import { createOrgIdentity, removeOrgMember, removeProjectAccess, setOrgRole, setProjectAccess } from '../engine/access/members.js';
import type { Action } from '../engine/access/roles.js';
import { isStrataError, type StrataError } from '../engine/errors.js';
import { createIdGenerator } from '../engine/ids.js';
import { type LocalEngine, openLocalEngine } from '../engine/local.js';
import type { OrgRole, ProjectAccess } from '../engine/types.js';
import { frozenClock } from './helpers/clock.js';
import { tempDir } from './helpers/world.js';

async function rejection(promise: Promise<unknown>): Promise<StrataError> {
  try {
    await promise;
  } catch (error) {
    if (isStrataError(error)) return error;
    throw error;
  }
  throw new Error('expected a rejection');
}

async function outcome(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
    return 'ok';
  } catch (error) {
    if (isStrataError(error)) return error.code;
    throw error;
  }
}

describe('authorization (engine/access)', () => {
  let home: { path: string; cleanup: () => Promise<void> };
  let local: LocalEngine;
  let deps: AccessDeps;
  let owner: Principal;
  let orgId: string;
  let projectId: string;

  async function principalWith(role: OrgRole, options: { access?: ProjectAccess; projectScope?: string } = {}): Promise<Principal> {
    const { identity } = await createOrgIdentity(deps, owner, { orgId, kind: 'user', name: `${role} user`, role });
    if (options.access !== undefined) await setProjectAccess(deps, owner, { projectId, identityId: identity.identityId, access: options.access });
    return { identity, authKind: 'api-key', keyId: null, orgId, projectScope: options.projectScope ?? null, roleCap: null };
  }

  beforeEach(async () => {
    home = await tempDir('strata-authz-');
    const clock = frozenClock();
    const ids = createIdGenerator(clock);
    local = await openLocalEngine({ home: home.path, clock, ids });
    deps = { repository: local.repository, clock, ids, pepper: randomBytes(32), environment: 'test' };
    const boot = await bootstrapOrganization(deps);
    orgId = boot.orgId;
    owner = await authenticateApiKey(deps, boot.apiKey);
    projectId = (await local.engine.createProject({ orgId, name: 'thesis' })).projectId;
  });

  afterEach(async () => {
    await local.close();
    await home.cleanup();
  });

  it('maps org roles to read / write / manage', async () => {
    const expected: Record<OrgRole, Record<Action, string>> = {
      viewer: { read: 'ok', write: 'FORBIDDEN', manage: 'FORBIDDEN' },
      member: { read: 'ok', write: 'ok', manage: 'FORBIDDEN' },
      admin: { read: 'ok', write: 'ok', manage: 'ok' },
      owner: { read: 'ok', write: 'ok', manage: 'ok' },
    };
    for (const role of ['viewer', 'member', 'admin', 'owner'] as const) {
      const principal = await principalWith(role);
      for (const action of ['read', 'write', 'manage'] as const) {
        expect(await outcome(authorizeProject(deps, principal, projectId, action)), `${role} ${action}`).toBe(expected[role][action]);
        expect(await outcome(authorizeOrg(deps, principal, orgId, action)), `${role} org ${action}`).toBe(expected[role][action]);
      }
    }
  });

  it('lets a project membership narrow the org role, never widen it', async () => {
    const cases: Array<[OrgRole, ProjectAccess, Record<Action, string>]> = [
      ['member', 'read', { read: 'ok', write: 'FORBIDDEN', manage: 'FORBIDDEN' }],
      ['admin', 'read', { read: 'ok', write: 'FORBIDDEN', manage: 'FORBIDDEN' }],
      ['admin', 'write', { read: 'ok', write: 'ok', manage: 'FORBIDDEN' }],
      ['viewer', 'write', { read: 'ok', write: 'FORBIDDEN', manage: 'FORBIDDEN' }],
      ['member', 'write', { read: 'ok', write: 'ok', manage: 'FORBIDDEN' }],
    ];
    const other = (await local.engine.createProject({ orgId, name: 'other' })).projectId;
    for (const [role, access, want] of cases) {
      const principal = await principalWith(role, { access });
      for (const action of ['read', 'write', 'manage'] as const) {
        expect(await outcome(authorizeProject(deps, principal, projectId, action)), `${role}/${access} ${action}`).toBe(want[action]);
      }
      // the narrowing is per project: the org role applies elsewhere
      if (role === 'member') expect(await outcome(authorizeProject(deps, principal, other, 'write'))).toBe('ok');
    }
  });

  it('hides other projects from a project-scoped credential exactly like missing ones', async () => {
    const other = (await local.engine.createProject({ orgId, name: 'other' })).projectId;
    const scoped = { ...owner, projectScope: projectId };
    await expect(authorizeProject(deps, scoped, projectId, 'manage')).resolves.toMatchObject({ role: 'owner' });
    const hidden = await rejection(authorizeProject(deps, scoped, other, 'read'));
    const missing = await rejection(authorizeProject(deps, scoped, '01a2027b-0000-7000-8000-000000000000', 'read'));
    expect(hidden.code).toBe('PROJECT_NOT_FOUND');
    expect({ ...missing, details: undefined }).toEqual({ ...hidden, details: undefined });
    expect(hidden.message).toBe(missing.message);
    expect((await visibleProjects(deps, scoped)).map((p) => p.projectId)).toEqual([projectId]);
    // organization routes are refused (403), not hidden
    expect(await rejection(authorizeOrg(deps, scoped, orgId, 'read'))).toMatchObject({ code: 'FORBIDDEN', status: 403 });
  });

  it('hides projects and organizations of other organizations (404)', async () => {
    const otherOrg = 'org-other';
    await local.repository.access.createOrganization({ orgId: otherOrg, name: 'Other', createdAt: '2026-01-01T00:00:00.000Z' });
    const foreign = (await local.engine.createProject({ orgId: otherOrg, name: 'secret' })).projectId;
    expect((await rejection(authorizeProject(deps, owner, foreign, 'read'))).code).toBe('PROJECT_NOT_FOUND');
    expect((await rejection(authorizeOrg(deps, owner, otherOrg, 'read'))).code).toBe('ORG_NOT_FOUND');
    expect((await visibleProjects(deps, owner)).map((p) => p.projectId)).toEqual([projectId]);
  });

  it('keeps at least one owner and lets only owners make owners', async () => {
    const admin = await principalWith('admin');
    const member = await principalWith('member');
    expect(await rejection(setOrgRole(deps, admin, { orgId, identityId: member.identity.identityId, role: 'owner' }))).toMatchObject({
      code: 'FORBIDDEN',
      details: { field: 'role' },
    });
    expect((await rejection(setOrgRole(deps, admin, { orgId, identityId: owner.identity.identityId, role: 'member' }))).code).toBe('FORBIDDEN');
    expect((await rejection(setOrgRole(deps, member, { orgId, identityId: admin.identity.identityId, role: 'viewer' }))).code).toBe('FORBIDDEN');
    // the only owner cannot step down or leave
    expect((await rejection(setOrgRole(deps, owner, { orgId, identityId: owner.identity.identityId, role: 'admin' }))).code).toBe('MEMBERSHIP_LAST_OWNER');
    expect((await rejection(removeOrgMember(deps, owner, { orgId, identityId: owner.identity.identityId }))).code).toBe('MEMBERSHIP_LAST_OWNER');
    expect(await local.repository.access.getOrgRole(orgId, owner.identity.identityId)).toBe('owner');
    // with a second owner it can
    await setOrgRole(deps, owner, { orgId, identityId: admin.identity.identityId, role: 'owner' });
    await setOrgRole(deps, owner, { orgId, identityId: owner.identity.identityId, role: 'admin' });
    expect(await local.repository.access.getOrgRole(orgId, owner.identity.identityId)).toBe('admin');
    expect((await rejection(setOrgRole(deps, owner, { orgId, identityId: 'nobody', role: 'member' }))).code).toBe('USER_NOT_FOUND');
  });

  it('lets exactly one of two owners demoting each other at once succeed', async () => {
    const second = await principalWith('owner');
    const [a, b] = await Promise.all([
      outcome(setOrgRole(deps, owner, { orgId, identityId: second.identity.identityId, role: 'member' })),
      outcome(setOrgRole(deps, second, { orgId, identityId: owner.identity.identityId, role: 'member' })),
    ]);
    expect([a, b].sort()).toEqual(['MEMBERSHIP_LAST_OWNER', 'ok']);
    const owners = (await local.repository.access.listOrgMembers(orgId)).filter((m) => m.role === 'owner');
    expect(owners).toHaveLength(1);
    // the refused change left no audit record behind
    const audited = (await local.repository.access.listAudit(orgId, { limit: 50 })).items.filter((r) => r.action === 'org.role.set');
    expect(audited).toHaveLength(1);
  });

  it('audits role and membership changes', async () => {
    const member = await principalWith('member');
    const id = member.identity.identityId;
    await setOrgRole(deps, owner, { orgId, identityId: id, role: 'viewer' });
    await setProjectAccess(deps, owner, { projectId, identityId: id, access: 'read' });
    await removeProjectAccess(deps, owner, { projectId, identityId: id });
    await removeOrgMember(deps, owner, { orgId, identityId: id });
    const records = (await local.repository.access.listAudit(orgId, { limit: 100 })).items.filter((r) => r.target === id);
    const summary = records.map((r) => [r.action, r.details]);
    expect(summary).toEqual(
      expect.arrayContaining([
        ['identity.create', expect.objectContaining({ role: 'member' })],
        ['org.role.set', expect.objectContaining({ from: 'member', to: 'viewer' })],
        ['project.access.set', expect.objectContaining({ projectId, from: null, to: 'read' })],
        ['project.access.remove', expect.objectContaining({ projectId, from: 'read' })],
        ['org.member.remove', expect.objectContaining({ from: 'viewer' })],
      ]),
    );
    expect(records.every((r) => r.actorId === owner.identity.identityId && r.orgId === orgId)).toBe(true);
    // a removed member no longer sees the project
    expect((await rejection(authorizeProject(deps, member, projectId, 'read'))).code).toBe('PROJECT_NOT_FOUND');
  });

  it('administers project memberships at org level (admin+), ignoring the admin’s own narrowing', async () => {
    const admin = await principalWith('admin', { access: 'read' });
    const member = await principalWith('member');
    await setProjectAccess(deps, admin, { projectId, identityId: member.identity.identityId, access: 'read' });
    expect(await local.repository.access.getProjectAccess(projectId, member.identity.identityId)).toBe('read');
    expect((await rejection(setProjectAccess(deps, member, { projectId, identityId: admin.identity.identityId, access: 'write' }))).code).toBe('FORBIDDEN');
    // only organization members can have a project membership
    const outsider = 'not-a-member';
    expect((await rejection(setProjectAccess(deps, owner, { projectId, identityId: outsider, access: 'write' }))).code).toBe('USER_NOT_FOUND');
  });
});
