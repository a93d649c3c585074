// People's sign-ins and preferences (issue 16): which internal identity an OIDC `(issuer, subject)`
// is, and the small JSON document of a person's settings that `/auth/me` returns.

import type { Database } from 'better-sqlite3';
import { StrataError } from '../errors.js';
import type { AccessRepository } from '../ports/metadata-repository.js';
import type { IdentityLink, WebSession } from '../types.js';
import { run } from './sqlite-rows.js';

type LinkMethods = Pick<AccessRepository, 'findLinkedIdentity' | 'getPreferences' | 'getWebSession'>;

/** The synchronous writes, for composing into one transaction (sqlite-access.ts applyAccessChanges). */
export interface LinkWrites {
  insertLink(link: IdentityLink): void;
  writePreferences(identityId: string, preferences: Record<string, unknown>): void;
  insertSession(session: WebSession): void;
  revokeSessions(at: string, filter: { sessionHmac?: string; identityId?: string; orgId?: string }): void;
}

export interface SessionRow {
  session_hmac: string;
  identity_id: string;
  org_id: string | null;
  created_at: string;
  expires_at: string;
  revoked_at: string | null;
}

export function createSqliteIdentityLinks(db: Database): { methods: LinkMethods; writes: LinkWrites } {
  const linkedIdentity = db.prepare('SELECT identity_id FROM identity_links WHERE issuer = ? AND subject = ?').pluck();
  const insertLinkRow = db.prepare('INSERT OR IGNORE INTO identity_links (issuer, subject, identity_id, created_at) VALUES (?, ?, ?, ?)');
  const preferencesOf = db.prepare('SELECT preferences FROM identity_preferences WHERE identity_id = ?').pluck();
  const upsertPreferences = db.prepare(
    'INSERT INTO identity_preferences (identity_id, preferences) VALUES (?, ?) ON CONFLICT (identity_id) DO UPDATE SET preferences = excluded.preferences',
  );
  const sessionByHmac = db.prepare('SELECT * FROM web_sessions WHERE session_hmac = ?');
  const insertSessionRow = db.prepare('INSERT INTO web_sessions (session_hmac, identity_id, org_id, created_at, expires_at, revoked_at) VALUES (?, ?, ?, ?, ?, ?)');
  const revokeOne = db.prepare('UPDATE web_sessions SET revoked_at = ? WHERE session_hmac = ? AND revoked_at IS NULL');
  const revokeAllOf = db.prepare('UPDATE web_sessions SET revoked_at = ? WHERE identity_id = ? AND revoked_at IS NULL');
  const revokeAllOfOrg = db.prepare('UPDATE web_sessions SET revoked_at = ? WHERE org_id = ? AND revoked_at IS NULL');
  return {
    methods: {
      getWebSession: (sessionHmac) =>
        run(() => {
          const row = sessionByHmac.get(sessionHmac) as SessionRow | undefined;
          if (row === undefined) return null;
          return {
            sessionHmac: row.session_hmac,
            identityId: row.identity_id,
            orgId: row.org_id,
            createdAt: row.created_at,
            expiresAt: row.expires_at,
            revokedAt: row.revoked_at,
          };
        }),
      findLinkedIdentity: (issuer, subject) => run(() => (linkedIdentity.get(issuer, subject) as string | undefined) ?? null),
      getPreferences: (identityId) =>
        run(() => {
          const text = preferencesOf.get(identityId) as string | undefined;
          return text === undefined ? {} : (JSON.parse(text) as Record<string, unknown>);
        }),
    },
    writes: {
      insertLink(link) {
        if (insertLinkRow.run(link.issuer, link.subject, link.identityId, link.createdAt).changes === 0) {
          throw new StrataError('IDENTITY_LINK_TAKEN', { details: { issuer: link.issuer } });
        }
      },
      writePreferences(identityId, preferences) {
        upsertPreferences.run(identityId, JSON.stringify(preferences));
      },
      insertSession(s) {
        insertSessionRow.run(s.sessionHmac, s.identityId, s.orgId, s.createdAt, s.expiresAt, s.revokedAt);
      },
      revokeSessions(at, filter) {
        if (filter.sessionHmac !== undefined) revokeOne.run(at, filter.sessionHmac);
        if (filter.identityId !== undefined) revokeAllOf.run(at, filter.identityId);
        if (filter.orgId !== undefined) revokeAllOfOrg.run(at, filter.orgId);
      },
    },
  };
}
