// API keys and the audit log on Postgres: the same rows and rules as sqlite-api-keys.ts, whose row
// mappers it reuses so both stores hand back identical records.

import { StrataError } from '../errors.js';
import type { AccessRepository } from '../ports/metadata-repository.js';
import type { ApiKeyRecord, AuditRecord, Page } from '../types.js';
import type { PgDatabase, Tx } from './pg-db.js';
import { checkLimit, decodeSeqCursor, encodeCursor } from './sqlite-cursor.js';
import { type ApiKeyRow, type AuditRow, keyParams, toApiKey } from './sqlite-api-keys.js';

type KeyAndAuditReads = Pick<AccessRepository, 'getApiKey' | 'listApiKeys' | 'touchApiKey' | 'appendAudit' | 'listAudit'>;

/** The writes and reads inside one transaction, for composing into applyAccessChanges (pg-access.ts). */
export interface PgKeyAndAuditWrites {
  getKey(tx: Tx, keyId: string, forUpdate?: boolean): Promise<ApiKeyRecord | null>;
  insertKey(tx: Tx, key: ApiKeyRecord): Promise<void>;
  updateKey(tx: Tx, keyId: string, patch: Partial<Omit<ApiKeyRecord, 'keyId'>>): Promise<void>;
  insertAudit(tx: Tx, record: AuditRecord): Promise<void>;
}

// keyParams (sqlite-api-keys.ts) orders the values as these columns, key_id last.
const INSERT_KEY = `INSERT INTO api_keys (environment, secret_hmac, identity_id, org_id, project_id, owner_id, purpose, created_at,
   expires_at, rotate_by, revoked_at, last_used_at, replaced_by, grace_until, role_cap, key_id)
 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)`;
const WRITE_KEY = `UPDATE api_keys SET environment = $1, secret_hmac = $2, identity_id = $3, org_id = $4, project_id = $5, owner_id = $6,
   purpose = $7, created_at = $8, expires_at = $9, rotate_by = $10, revoked_at = $11, last_used_at = $12, replaced_by = $13,
   grace_until = $14, role_cap = $15 WHERE key_id = $16`;
// Only moves forward: a slow request finishing late never rewinds lastUsedAt, and a repeat touch with
// the same time matches no row, so Postgres writes no new row version and no WAL. The comparison is
// spelled COLLATE "C" because last_used_at has the database's default collation, and a linguistic
// one may order ISO timestamps by other rules than SQLite's byte order.
const TOUCH = 'UPDATE api_keys SET last_used_at = $1 WHERE key_id = $2 AND (last_used_at IS NULL OR last_used_at COLLATE "C" < $1)';
const INSERT_AUDIT =
  'INSERT INTO audit (audit_id, org_id, actor_id, action, target, details, timestamp, request_id, client_ip) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)';

const toAudit = (row: AuditRow): AuditRecord => ({
  auditId: row.audit_id,
  orgId: row.org_id,
  actorId: row.actor_id,
  action: row.action,
  target: row.target,
  details: JSON.parse(row.details) as Record<string, unknown>,
  timestamp: row.timestamp,
  requestId: row.request_id,
  clientIp: row.client_ip,
});

const auditParams = (record: AuditRecord): unknown[] => [
  record.auditId,
  record.orgId,
  record.actorId,
  record.action,
  record.target,
  JSON.stringify(record.details),
  record.timestamp,
  record.requestId,
  record.clientIp,
];

export function createPgApiKeys(db: PgDatabase): { reads: KeyAndAuditReads; writes: PgKeyAndAuditWrites } {
  const writes: PgKeyAndAuditWrites = {
    async getKey(tx, keyId, forUpdate = false) {
      // An id with NUL names no key (Postgres text cannot hold one): KEY_NOT_FOUND, as SQLite answers.
      if (keyId.includes('\0')) return null;
      const row = await tx.one<ApiKeyRow>(`SELECT * FROM api_keys WHERE key_id = $1${forUpdate ? ' FOR UPDATE' : ''}`, [keyId]);
      return row === undefined ? null : toApiKey(row);
    },
    async insertKey(tx, key) {
      await tx.query(INSERT_KEY, keyParams(key));
    },
    async updateKey(tx, keyId, patch) {
      // FOR UPDATE: a read-modify-write of the whole row; the row lock keeps a concurrent update of
      // other fields (which the access lock already excludes) from being overwritten with old values.
      const current = await writes.getKey(tx, keyId, true);
      if (current === null) throw new StrataError('KEY_NOT_FOUND', { details: { keyId } });
      // An explicit `undefined` in the patch means "not given", not "set to null".
      const given = Object.fromEntries(Object.entries(patch).filter(([, value]) => value !== undefined));
      await tx.query(WRITE_KEY, keyParams({ ...current, ...given, keyId }));
    },
    async insertAudit(tx, record) {
      await tx.query(INSERT_AUDIT, auditParams(record));
    },
  };

  const listAudit = async (orgId: string, options: { cursor?: string; limit: number }): Promise<Page<AuditRecord>> => {
    const limit = checkLimit(options.limit);
    const before = options.cursor === undefined ? Number.MAX_SAFE_INTEGER : decodeSeqCursor('audit', options.cursor);
    // After the checks, so a bad limit or cursor fails as it does in SQLite: no organization id holds
    // NUL (Postgres text cannot), so there is nothing to list.
    if (orgId.includes('\0')) return { items: [] };
    const rows = await db.query<AuditRow>('SELECT * FROM audit WHERE org_id = $1 AND seq < $2 ORDER BY seq DESC LIMIT $3', [orgId, before, limit + 1]);
    const page: Page<AuditRecord> = { items: rows.slice(0, limit).map(toAudit) };
    if (rows.length > limit) page.nextCursor = encodeCursor('audit', rows[limit - 1]!.seq);
    return page;
  };

  return {
    reads: {
      getApiKey: async (keyId) => {
        const row = await db.one<ApiKeyRow>('SELECT * FROM api_keys WHERE key_id = $1', [keyId]);
        return row === undefined ? null : toApiKey(row);
      },
      listApiKeys: async (orgId) => (await db.query<ApiKeyRow>('SELECT * FROM api_keys WHERE org_id = $1 ORDER BY created_at, key_id', [orgId])).map(toApiKey),
      // Every authenticated request may call this: one autocommit UPDATE, no transaction, no lock
      // (lastUsedAt is read by no guard). authenticate.ts already skips it within its resolution.
      touchApiKey: async (keyId, at) => {
        await db.query(TOUCH, [at, keyId]);
      },
      // Not under the access lock: no guard reads the audit log, and a record is one INSERT. Its seq
      // orders the log; one with a smaller seq may commit after a larger one, but a reader paging
      // newest-first never misses a row that was committed when its first page was read.
      appendAudit: async (record) => {
        await db.query(INSERT_AUDIT, auditParams(record));
      },
      listAudit,
    },
    writes,
  };
}
