// SSO connections on Postgres (sqlite-sso.ts is the SQLite twin): an organization's identity provider
// and the email domains it routes.

import { StrataError } from '../errors.js';
import type { AccessRepository } from '../ports/metadata-repository.js';
import type { SsoConnection, SsoDomain } from '../types.js';
import { isUniqueViolation, type PgDatabase, type Tx } from './pg-db.js';
import type { ConnectionRow, DomainRow } from './sqlite-sso.js';

type SsoReads = Pick<AccessRepository, 'getSsoConnection' | 'listSsoConnections' | 'findSsoConnectionForDomain' | 'findActiveSsoConnection'>;

/** The writes and guards inside one transaction, for composing into applyAccessChanges (pg-access.ts). */
export interface PgSsoWrites {
  putConnection(tx: Tx, connection: SsoConnection): Promise<void>;
  requireDomainUnclaimed(tx: Tx, domain: string, connectionId: string): Promise<void>;
  requireIssuerUnclaimed(tx: Tx, issuer: string, connectionId: string): Promise<void>;
}

// A connection and its domains in one statement, so a reader never sees a connection with the domains
// of a concurrent put half applied (two statements would read two snapshots under READ COMMITTED).
// The domains come in domain order (COLLATE "C": SQLite's byte order).
const CONNECTION = `SELECT c.*, COALESCE((
    SELECT json_agg(json_build_object('domain', d.domain, 'verification_token', d.verification_token, 'verified_at', d.verified_at) ORDER BY d.domain)
    FROM sso_domains d WHERE d.connection_id = c.connection_id), '[]'::json) AS domains
  FROM sso_connections c`;

type ConnectionWithDomains = ConnectionRow & { domains: DomainRow[] };

const toConnection = (row: ConnectionWithDomains): SsoConnection => ({
  connectionId: row.connection_id,
  orgId: row.org_id,
  issuer: row.issuer,
  clientId: row.client_id,
  audience: row.audience,
  tokenType: row.token_type as SsoConnection['tokenType'],
  scopes: JSON.parse(row.scopes) as string[],
  domains: row.domains.map((d): SsoDomain => ({ domain: d.domain, verificationToken: d.verification_token, verifiedAt: d.verified_at })),
  testedAt: row.tested_at,
  testedSubject: row.tested_subject,
  active: row.active === 1,
  activatedAt: row.activated_at,
  createdAt: row.created_at,
});

export function createPgSso(db: PgDatabase): { reads: SsoReads; writes: PgSsoWrites } {
  const one = async (sql: string, params: unknown[]): Promise<SsoConnection | null> => {
    const row = await db.one<ConnectionWithDomains>(sql, params);
    return row === undefined ? null : toConnection(row);
  };
  return {
    reads: {
      getSsoConnection: (connectionId) => one(`${CONNECTION} WHERE c.connection_id = $1`, [connectionId]),
      listSsoConnections: async (orgId) =>
        (await db.query<ConnectionWithDomains>(`${CONNECTION} WHERE c.org_id = $1 ORDER BY c.created_at, c.connection_id`, [orgId])).map(toConnection),
      findSsoConnectionForDomain: (domain) =>
        one(
          `${CONNECTION} WHERE c.active = 1 AND EXISTS (SELECT 1 FROM sso_domains d WHERE d.connection_id = c.connection_id AND d.domain = $1 AND d.verified_at IS NOT NULL) LIMIT 1`,
          [domain],
        ),
      findActiveSsoConnection: (issuer) => one(`${CONNECTION} WHERE c.issuer = $1 AND c.active = 1 ORDER BY c.created_at LIMIT 1`, [issuer]),
    },
    writes: {
      async putConnection(tx, c) {
        await tx.query(
          `INSERT INTO sso_connections (connection_id, org_id, issuer, client_id, audience, token_type, scopes, tested_at, tested_subject, active, activated_at, created_at)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
           ON CONFLICT (connection_id) DO UPDATE SET issuer = excluded.issuer, client_id = excluded.client_id, audience = excluded.audience,
             token_type = excluded.token_type, scopes = excluded.scopes, tested_at = excluded.tested_at, tested_subject = excluded.tested_subject,
             active = excluded.active, activated_at = excluded.activated_at`,
          [c.connectionId, c.orgId, c.issuer, c.clientId, c.audience, c.tokenType, JSON.stringify(c.scopes), c.testedAt, c.testedSubject, c.active ? 1 : 0, c.activatedAt, c.createdAt],
        );
        await tx.query('DELETE FROM sso_domains WHERE connection_id = $1', [c.connectionId]);
        // One row at a time (a connection has a handful of domains): a verified domain that another
        // connection verified concurrently, in a transaction the guard below could not see, is refused
        // by the partial unique index, and the error can name that domain.
        for (const d of c.domains) {
          try {
            await tx.query('INSERT INTO sso_domains (connection_id, domain, verification_token, verified_at) VALUES ($1, $2, $3, $4)', [
              c.connectionId,
              d.domain,
              d.verificationToken,
              d.verifiedAt,
            ]);
          } catch (error) {
            if (isUniqueViolation(error, 'sso_domains_verified')) throw new StrataError('SSO_DOMAIN_TAKEN', { details: { domain: d.domain } });
            throw error;
          }
        }
      },
      async requireDomainUnclaimed(tx, domain, connectionId) {
        const claimed = await tx.one('SELECT 1 FROM sso_domains WHERE domain = $1 AND verified_at IS NOT NULL AND connection_id <> $2 LIMIT 1', [domain, connectionId]);
        if (claimed !== undefined) throw new StrataError('SSO_DOMAIN_TAKEN', { details: { domain } });
      },
      async requireIssuerUnclaimed(tx, issuer, connectionId) {
        // No unique index says "one active connection per issuer" (SQLite's schema has none either), so
        // this guard is only as good as the access lock applyAccessChanges holds while it reads.
        const claimed = await tx.one('SELECT 1 FROM sso_connections WHERE issuer = $1 AND active = 1 AND connection_id <> $2 LIMIT 1', [issuer, connectionId]);
        if (claimed !== undefined) throw new StrataError('SSO_ISSUER_TAKEN', { details: { issuer } });
      },
    },
  };
}
