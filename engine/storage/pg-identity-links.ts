// People's sign-ins, preferences and browser sessions on Postgres (sqlite-identity-links.ts is the
// SQLite twin): which identity an OIDC `(issuer, subject)` is, a person's settings, web sessions.

import { StrataError } from '../errors.js';
import type { AccessRepository } from '../ports/metadata-repository.js';
import type { IdentityLink, WebSession } from '../types.js';
import { isUniqueViolation, type PgDatabase, type Tx } from './pg-db.js';
import type { SessionRow } from './sqlite-identity-links.js';

type LinkReads = Pick<AccessRepository, 'findLinkedIdentity' | 'getPreferences' | 'getWebSession'>;

/** The writes inside one transaction, for composing into applyAccessChanges (pg-access.ts). */
export interface PgLinkWrites {
  insertLink(tx: Tx, link: IdentityLink): Promise<void>;
  writePreferences(tx: Tx, identityId: string, preferences: Record<string, unknown>): Promise<void>;
  insertSession(tx: Tx, session: WebSession): Promise<void>;
  revokeSessions(tx: Tx, at: string, filter: { sessionHmac?: string; identityId?: string; orgId?: string }): Promise<void>;
}

const linkTaken = (link: IdentityLink): StrataError => new StrataError('IDENTITY_LINK_TAKEN', { details: { issuer: link.issuer } });

export function createPgIdentityLinks(db: PgDatabase): { reads: LinkReads; writes: PgLinkWrites } {
  return {
    reads: {
      findLinkedIdentity: async (issuer, subject) =>
        (await db.one<{ identity_id: string }>('SELECT identity_id FROM identity_links WHERE issuer = $1 AND subject = $2', [issuer, subject]))?.identity_id ?? null,
      getPreferences: async (identityId) => {
        const row = await db.one<{ preferences: string }>('SELECT preferences FROM identity_preferences WHERE identity_id = $1', [identityId]);
        return row === undefined ? {} : (JSON.parse(row.preferences) as Record<string, unknown>);
      },
      getWebSession: async (sessionHmac) => {
        const row = await db.one<SessionRow>('SELECT * FROM web_sessions WHERE session_hmac = $1', [sessionHmac]);
        if (row === undefined) return null;
        return {
          sessionHmac: row.session_hmac,
          identityId: row.identity_id,
          orgId: row.org_id,
          createdAt: row.created_at,
          expiresAt: row.expires_at,
          revokedAt: row.revoked_at,
        };
      },
    },
    writes: {
      async insertLink(tx, link) {
        // The primary key decides a concurrent first sign-in of one person, also in a transaction that
        // does not hold the access lock: ON CONFLICT DO NOTHING waits for the other insert of the same
        // key and, once it commits, inserts nothing, so RETURNING comes back empty.
        let rows: unknown[];
        try {
          rows = await tx.query(
            'INSERT INTO identity_links (issuer, subject, identity_id, created_at) VALUES ($1, $2, $3, $4) ON CONFLICT (issuer, subject) DO NOTHING RETURNING 1',
            [link.issuer, link.subject, link.identityId, link.createdAt],
          );
        } catch (error) {
          if (isUniqueViolation(error, 'identity_links_pkey')) throw linkTaken(link);
          throw error;
        }
        if (rows.length === 0) throw linkTaken(link);
      },
      async writePreferences(tx, identityId, preferences) {
        await tx.query(
          'INSERT INTO identity_preferences (identity_id, preferences) VALUES ($1, $2) ON CONFLICT (identity_id) DO UPDATE SET preferences = excluded.preferences',
          [identityId, JSON.stringify(preferences)],
        );
      },
      async insertSession(tx, s) {
        await tx.query('INSERT INTO web_sessions (session_hmac, identity_id, org_id, created_at, expires_at, revoked_at) VALUES ($1, $2, $3, $4, $5, $6)', [
          s.sessionHmac,
          s.identityId,
          s.orgId,
          s.createdAt,
          s.expiresAt,
          s.revokedAt,
        ]);
      },
      async revokeSessions(tx, at, filter) {
        // Each selector given revokes what it names (SQLite runs them one after another the same way);
        // a session already revoked keeps the time it was revoked.
        if (filter.sessionHmac !== undefined) await tx.query('UPDATE web_sessions SET revoked_at = $1 WHERE session_hmac = $2 AND revoked_at IS NULL', [at, filter.sessionHmac]);
        if (filter.identityId !== undefined) await tx.query('UPDATE web_sessions SET revoked_at = $1 WHERE identity_id = $2 AND revoked_at IS NULL', [at, filter.identityId]);
        if (filter.orgId !== undefined) await tx.query('UPDATE web_sessions SET revoked_at = $1 WHERE org_id = $2 AND revoked_at IS NULL', [at, filter.orgId]);
      },
    },
  };
}
