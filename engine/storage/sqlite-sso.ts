// SSO connections (issue 16): an organization's identity provider and the email domains it routes.

import type { Database } from 'better-sqlite3';
import { StrataError } from '../errors.js';
import type { AccessRepository } from '../ports/metadata-repository.js';
import type { SsoConnection, SsoDomain } from '../types.js';
import { run } from './sqlite-rows.js';

export interface ConnectionRow {
  connection_id: string;
  org_id: string;
  issuer: string;
  client_id: string;
  audience: string;
  token_type: string;
  scopes: string;
  tested_at: string | null;
  tested_subject: string | null;
  active: number;
  activated_at: string | null;
  created_at: string;
}

export interface DomainRow {
  domain: string;
  verification_token: string;
  verified_at: string | null;
}

type SsoMethods = Pick<AccessRepository, 'getSsoConnection' | 'listSsoConnections' | 'findSsoConnectionForDomain' | 'findActiveSsoConnection'>;

/** The synchronous writes and guards, for composing into one transaction (sqlite-access.ts). */
export interface SsoWrites {
  putConnection(connection: SsoConnection): void;
  requireDomainUnclaimed(domain: string, connectionId: string): void;
  requireIssuerUnclaimed(issuer: string, connectionId: string): void;
}

export function createSqliteSso(db: Database): { methods: SsoMethods; writes: SsoWrites } {
  const byId = db.prepare('SELECT * FROM sso_connections WHERE connection_id = ?');
  const byOrg = db.prepare('SELECT * FROM sso_connections WHERE org_id = ? ORDER BY created_at, connection_id');
  const activeByIssuer = db.prepare('SELECT * FROM sso_connections WHERE issuer = ? AND active = 1 ORDER BY created_at LIMIT 1');
  const forDomain = db.prepare(
    `SELECT c.* FROM sso_domains d JOIN sso_connections c ON c.connection_id = d.connection_id
     WHERE d.domain = ? AND d.verified_at IS NOT NULL AND c.active = 1 LIMIT 1`,
  );
  const domainsOf = db.prepare('SELECT domain, verification_token, verified_at FROM sso_domains WHERE connection_id = ? ORDER BY domain');
  const upsert = db.prepare(
    `INSERT INTO sso_connections (connection_id, org_id, issuer, client_id, audience, token_type, scopes, tested_at, tested_subject, active, activated_at, created_at)
     VALUES (@connectionId, @orgId, @issuer, @clientId, @audience, @tokenType, @scopes, @testedAt, @testedSubject, @active, @activatedAt, @createdAt)
     ON CONFLICT (connection_id) DO UPDATE SET issuer = excluded.issuer, client_id = excluded.client_id, audience = excluded.audience,
       token_type = excluded.token_type, scopes = excluded.scopes, tested_at = excluded.tested_at, tested_subject = excluded.tested_subject,
       active = excluded.active, activated_at = excluded.activated_at`,
  );
  const deleteDomains = db.prepare('DELETE FROM sso_domains WHERE connection_id = ?');
  const insertDomain = db.prepare('INSERT INTO sso_domains (connection_id, domain, verification_token, verified_at) VALUES (?, ?, ?, ?)');
  const claimedDomain = db.prepare('SELECT connection_id FROM sso_domains WHERE domain = ? AND verified_at IS NOT NULL AND connection_id <> ?').pluck();
  const claimedIssuer = db.prepare('SELECT connection_id FROM sso_connections WHERE issuer = ? AND active = 1 AND connection_id <> ?').pluck();

  const toConnection = (row: ConnectionRow): SsoConnection => ({
    connectionId: row.connection_id,
    orgId: row.org_id,
    issuer: row.issuer,
    clientId: row.client_id,
    audience: row.audience,
    tokenType: row.token_type as SsoConnection['tokenType'],
    scopes: JSON.parse(row.scopes) as string[],
    domains: (domainsOf.all(row.connection_id) as DomainRow[]).map(
      (d): SsoDomain => ({ domain: d.domain, verificationToken: d.verification_token, verifiedAt: d.verified_at }),
    ),
    testedAt: row.tested_at,
    testedSubject: row.tested_subject,
    active: row.active === 1,
    activatedAt: row.activated_at,
    createdAt: row.created_at,
  });
  const one = (row: unknown): SsoConnection | null => (row === undefined ? null : toConnection(row as ConnectionRow));

  return {
    methods: {
      getSsoConnection: (connectionId) => run(() => one(byId.get(connectionId))),
      listSsoConnections: (orgId) => run(() => (byOrg.all(orgId) as ConnectionRow[]).map(toConnection)),
      findSsoConnectionForDomain: (domain) => run(() => one(forDomain.get(domain))),
      findActiveSsoConnection: (issuer) => run(() => one(activeByIssuer.get(issuer))),
    },
    writes: {
      putConnection(c) {
        upsert.run({ ...c, scopes: JSON.stringify(c.scopes), active: c.active ? 1 : 0 });
        deleteDomains.run(c.connectionId);
        for (const d of c.domains) insertDomain.run(c.connectionId, d.domain, d.verificationToken, d.verifiedAt);
      },
      requireDomainUnclaimed(domain, connectionId) {
        if (claimedDomain.get(domain, connectionId) !== undefined) throw new StrataError('SSO_DOMAIN_TAKEN', { details: { domain } });
      },
      requireIssuerUnclaimed(issuer, connectionId) {
        if (claimedIssuer.get(issuer, connectionId) !== undefined) throw new StrataError('SSO_ISSUER_TAKEN', { details: { issuer } });
      },
    },
  };
}
