// Every key and membership route, for every pair of roles (the caller's, the target's), over HTTP:
// the status it answers and, when it refuses, that nothing changed (issue 13, item 10: an admin could
// rotate an owner's key, keep its new secret, make itself owner and revoke the bootstrap key).
//
// The expectations are written out as rules here, independently of engine/access, so a change to the
// engine that loosens one shows up as a failing pair.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ORG_ROLES } from '../engine/access/roles.js';
import type { OrgRole } from '../engine/types.js';
import { type Harness, openHarness } from './control-api-harness.js';

const RANK: Record<OrgRole, number> = { viewer: 1, member: 2, admin: 3, owner: 4 };
const atLeast = (a: OrgRole, b: OrgRole) => RANK[a] >= RANK[b];

let h: Harness;
let projectId: string;
let counter = 0;

beforeAll(async () => {
  h = await openHarness();
  projectId = await h.createProject('matrix');
});

afterAll(async () => {
  await h.dispose();
});

/** A key with `role`, created by the bootstrap owner (so its owner of record is not the caller). */
async function keyWithRole(role: OrgRole): Promise<{ apiKey: string; keyId: string; identityId: string }> {
  counter += 1;
  return h.createKey({ purpose: `${role} ${counter}`, role });
}

/** Everything a refused call must leave as it was. */
async function state(): Promise<string> {
  const keys = await h.ok('GET', '/v1/keys');
  const members = await h.ok('GET', `/v1/orgs/${h.orgId}/members`);
  const projectMembers = await h.ok('GET', `/v1/projects/${projectId}/members`);
  const audit = await h.ok<{ items: unknown[] }>('GET', `/v1/orgs/${h.orgId}/audit?limit=1000`);
  return JSON.stringify([keys, members, projectMembers, audit.items.length]);
}

interface Case {
  label: string;
  run: (caller: string, target: { apiKey: string; keyId: string; identityId: string }) => ReturnType<Harness['request']>;
  /** the status the rules give for a caller of role `actor` acting on a target of role `target` */
  expected: (actor: OrgRole, target: OrgRole) => number;
  /** prepared by the owner before the call */
  prepare?: (target: { identityId: string }) => Promise<void>;
}

// Keys of others are visible to admins and owners only; others see no such key.
const visible = (actor: OrgRole) => atLeast(actor, 'admin');

const CASES: Case[] = [
  {
    label: 'rotate the key',
    run: (caller, target) => h.request('POST', `/v1/keys/${target.keyId}/rotate`, { key: caller, body: {} }),
    // The new secret goes only to the key itself, its owner of record or an owner.
    expected: (actor, target) => (!visible(actor) ? 404 : actor === 'owner' && atLeast(actor, target) ? 201 : 403),
  },
  {
    label: 'revoke the key',
    run: (caller, target) => h.request('POST', `/v1/keys/${target.keyId}/revoke`, { key: caller, body: {} }),
    expected: (actor, target) => (!visible(actor) ? 404 : atLeast(actor, target) ? 200 : 403),
  },
  {
    label: 'create a key with that role',
    run: (caller, target) => h.request('POST', '/v1/keys', { key: caller, body: { purpose: 'made', role: roleOf(target) } }),
    expected: (actor, target) => (atLeast(actor, 'member') && atLeast(actor, target) ? 201 : 403),
  },
  ...ORG_ROLES.map(
    (newRole): Case => ({
      label: `set its org role to ${newRole}`,
      run: (caller, target) => h.request('PUT', `/v1/orgs/${h.orgId}/members/${target.identityId}`, { key: caller, body: { role: newRole } }),
      expected: (actor, target) => (!atLeast(actor, 'admin') ? 403 : (target === 'owner' || newRole === 'owner') && actor !== 'owner' ? 403 : 200),
    }),
  ),
  {
    label: 'remove it from the organization',
    run: (caller, target) => h.request('DELETE', `/v1/orgs/${h.orgId}/members/${target.identityId}`, { key: caller }),
    expected: (actor, target) => (!atLeast(actor, 'admin') ? 403 : target === 'owner' && actor !== 'owner' ? 403 : 204),
  },
  {
    label: 'narrow its project access to read',
    run: (caller, target) => h.request('PUT', `/v1/projects/${projectId}/members/${target.identityId}`, { key: caller, body: { access: 'read' } }),
    expected: (actor, target) => (atLeast(actor, 'admin') && atLeast(actor, target) ? 200 : 403),
  },
  {
    label: 'remove its project access',
    prepare: async (target) => {
      await h.ok('PUT', `/v1/projects/${projectId}/members/${target.identityId}`, { body: { access: 'write' } });
    },
    run: (caller, target) => h.request('DELETE', `/v1/projects/${projectId}/members/${target.identityId}`, { key: caller }),
    expected: (actor, target) => (atLeast(actor, 'admin') && atLeast(actor, target) ? 204 : 403),
  },
];

const targetRoles = new Map<string, OrgRole>();
function roleOf(target: { keyId: string }): OrgRole {
  return targetRoles.get(target.keyId)!;
}

describe('the role matrix of key and membership routes', () => {
  for (const actor of ORG_ROLES) {
    for (const target of ORG_ROLES) {
      it(`a ${actor} acting on a ${target}`, async () => {
        const caller = actor === 'owner' ? h.ownerKey : (await keyWithRole(actor)).apiKey;
        // Its first use records lastUsedAt (a change of its own, not of what it acts on).
        await h.ok('GET', '/v1/orgs', { key: caller });
        for (const c of CASES) {
          const victim = await keyWithRole(target);
          targetRoles.set(victim.keyId, target);
          await c.prepare?.(victim);
          const before = await state();
          const res = await c.run(caller, victim);
          const expected = c.expected(actor, target);
          expect(res.statusCode, `${actor} → ${target}: ${c.label}: ${res.body}`).toBe(expected);
          if (expected >= 400) {
            expect(await state(), `${actor} → ${target}: ${c.label} changed something`).toBe(before);
            // The victim's key still works exactly as before.
            expect((await h.request('GET', '/v1/orgs', { key: victim.apiKey })).statusCode).toBe(200);
          }
        }
      });
    }
  }

  it('a key may rotate itself whatever its role, and an owner of record its own keys up to its role', async () => {
    for (const role of ORG_ROLES) {
      const key = await keyWithRole(role);
      const res = await h.request('POST', `/v1/keys/${key.keyId}/rotate`, { key: key.apiKey, body: {} });
      expect(res.statusCode, `${role} rotating itself: ${res.body}`).toBe(201);
    }
    const admin = await keyWithRole('admin');
    const own = await h.ok<{ key: { keyId: string } }>('POST', '/v1/keys', { key: admin.apiKey, body: { purpose: 'ci', role: 'member' }, status: 201 });
    expect((await h.request('POST', `/v1/keys/${own.key.keyId}/rotate`, { key: admin.apiKey, body: {} })).statusCode).toBe(201);
  });

  it('the reported escalation fails at its first step: the admin gets no owner secret and cannot lock the owner out', async () => {
    const admin = await keyWithRole('admin');
    const keys = await h.ok<{ items: Array<{ keyId: string; purpose: string }> }>('GET', '/v1/keys', { key: admin.apiKey });
    const bootstrap = keys.items.find((k) => k.purpose === 'bootstrap owner key')!;
    const rotated = await h.request('POST', `/v1/keys/${bootstrap.keyId}/rotate`, { key: admin.apiKey, body: {} });
    expect(rotated.statusCode).toBe(403);
    expect(rotated.json().error.code).toBe('FORBIDDEN');
    expect(rotated.body).not.toMatch(/rk\.test\./);
    expect((await h.request('PUT', `/v1/orgs/${h.orgId}/members/${admin.identityId}`, { key: admin.apiKey, body: { role: 'owner' } })).statusCode).toBe(403);
    expect((await h.request('POST', `/v1/keys/${bootstrap.keyId}/revoke`, { key: admin.apiKey, body: {} })).statusCode).toBe(403);
    expect((await h.request('PUT', `/v1/projects/${projectId}/members/${h.ownerId}`, { key: admin.apiKey, body: { access: 'read' } })).statusCode).toBe(403);
    expect((await h.request('GET', '/v1/keys', { key: h.ownerKey })).statusCode).toBe(200);
  });
});
