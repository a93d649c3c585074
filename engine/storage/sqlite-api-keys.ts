import type { Database } from 'better-sqlite3';
import { StrataError } from '../errors.js';
import type { AccessRepository } from '../ports/metadata-repository.js';
import type { ApiKeyRecord, AuditRecord, OrgRole, Page } from '../types.js';
import { checkLimit, decodeSeqCursor, encodeCursor } from './sqlite-cursor.js';
import { run } from './sqlite-rows.js';

export interface ApiKeyRow {
  key_id: string;
  environment: string;
  secret_hmac: string;
  identity_id: string;
  org_id: string;
  project_id: string | null;
  owner_id: string;
  purpose: string;
  created_at: string;
  expires_at: string | null;
  rotate_by: string | null;
  revoked_at: string | null;
  last_used_at: string | null;
  replaced_by: string | null;
  grace_until: string | null;
  role_cap: string | null;
}

export function toApiKey(row: ApiKeyRow): ApiKeyRecord {
  return {
    keyId: row.key_id,
    environment: row.environment,
    secretHmac: row.secret_hmac,
    identityId: row.identity_id,
    orgId: row.org_id,
    projectId: row.project_id,
    ownerId: row.owner_id,
    purpose: row.purpose,
    createdAt: row.created_at,
    expiresAt: row.expires_at,
    rotateBy: row.rotate_by,
    revokedAt: row.revoked_at,
    lastUsedAt: row.last_used_at,
    replacedBy: row.replaced_by,
    graceUntil: row.grace_until,
    roleCap: row.role_cap as OrgRole | null,
  };
}

export function keyParams(key: ApiKeyRecord): Array<string | null> {
  return [
    key.environment,
    key.secretHmac,
    key.identityId,
    key.orgId,
    key.projectId,
    key.ownerId,
    key.purpose,
    key.createdAt,
    key.expiresAt,
    key.rotateBy,
    key.revokedAt,
    key.lastUsedAt,
    key.replacedBy,
    key.graceUntil,
    key.roleCap,
    key.keyId,
  ];
}

export interface AuditRow {
  seq: number;
  audit_id: string;
  org_id: string;
  actor_id: string;
  action: string;
  target: string;
  details: string;
  timestamp: string;
  request_id: string | null;
  client_ip: string | null;
}

type KeyAndAuditMethods = Pick<
  AccessRepository,
  'createApiKey' | 'getApiKey' | 'listApiKeys' | 'updateApiKey' | 'touchApiKey' | 'appendAudit' | 'listAudit'
>;

/** The synchronous writes, for composing into one transaction (sqlite-access.ts applyAccessChanges). */
export interface KeyAndAuditWrites {
  getKey(keyId: string): ApiKeyRecord | null;
  insertKey(key: ApiKeyRecord): void;
  updateKey(keyId: string, patch: Partial<Omit<ApiKeyRecord, 'keyId'>>): void;
  insertAudit(record: AuditRecord): void;
}

export function createSqliteApiKeys(db: Database): { methods: KeyAndAuditMethods; writes: KeyAndAuditWrites } {
  const insertKey = db.prepare(
    `INSERT INTO api_keys (environment, secret_hmac, identity_id, org_id, project_id, owner_id, purpose, created_at,
       expires_at, rotate_by, revoked_at, last_used_at, replaced_by, grace_until, role_cap, key_id)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  );
  const writeKey = db.prepare(
    `UPDATE api_keys SET environment = ?, secret_hmac = ?, identity_id = ?, org_id = ?, project_id = ?, owner_id = ?,
       purpose = ?, created_at = ?, expires_at = ?, rotate_by = ?, revoked_at = ?, last_used_at = ?, replaced_by = ?,
       grace_until = ?, role_cap = ? WHERE key_id = ?`,
  );
  const keyById = db.prepare('SELECT * FROM api_keys WHERE key_id = ?');
  const keysOfOrg = db.prepare('SELECT * FROM api_keys WHERE org_id = ? ORDER BY created_at, key_id');
  // Only moves forward: a slow request finishing late never rewinds lastUsedAt, and a repeat touch
  // with the same time writes nothing (no WAL frame, no fsync).
  const touch = db.prepare(
    'UPDATE api_keys SET last_used_at = ? WHERE key_id = ? AND (last_used_at IS NULL OR last_used_at < ?)',
  );
  const insertAudit = db.prepare(
    'INSERT INTO audit (audit_id, org_id, actor_id, action, target, details, timestamp, request_id, client_ip) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)',
  );
  const auditPage = db.prepare('SELECT * FROM audit WHERE org_id = ? AND seq < ? ORDER BY seq DESC LIMIT ?');

  const getKey = (keyId: string): ApiKeyRecord | null => {
    const row = keyById.get(keyId) as ApiKeyRow | undefined;
    return row === undefined ? null : toApiKey(row);
  };

  const updateKey = db.transaction((keyId: string, patch: Partial<Omit<ApiKeyRecord, 'keyId'>>): void => {
    const current = getKey(keyId);
    if (current === null) throw new StrataError('KEY_NOT_FOUND', { details: { keyId } });
    // An explicit `undefined` in the patch means "not given", not "set to null".
    const given = Object.fromEntries(Object.entries(patch).filter(([, value]) => value !== undefined));
    writeKey.run(...keyParams({ ...current, ...given, keyId }));
  });

  const listAudit = (orgId: string, options: { cursor?: string; limit: number }): Page<AuditRecord> => {
    const limit = checkLimit(options.limit);
    const before = options.cursor === undefined ? Number.MAX_SAFE_INTEGER : decodeSeqCursor('audit', options.cursor);
    const rows = auditPage.all(orgId, before, limit + 1) as AuditRow[];
    const page: Page<AuditRecord> = {
      items: rows.slice(0, limit).map((row) => ({
        auditId: row.audit_id,
        orgId: row.org_id,
        actorId: row.actor_id,
        action: row.action,
        target: row.target,
        details: JSON.parse(row.details) as Record<string, unknown>,
        timestamp: row.timestamp,
        requestId: row.request_id,
        clientIp: row.client_ip,
      })),
    };
    if (rows.length > limit) page.nextCursor = encodeCursor('audit', rows[limit - 1]!.seq);
    return page;
  };

  const insertAuditRecord = (record: AuditRecord): void => {
    insertAudit.run(
      record.auditId,
      record.orgId,
      record.actorId,
      record.action,
      record.target,
      JSON.stringify(record.details),
      record.timestamp,
      record.requestId,
      record.clientIp,
    );
  };
  const insertKeyRecord = (key: ApiKeyRecord): void => {
    insertKey.run(...keyParams(key));
  };

  return {
    methods: {
      createApiKey: (key) => run(() => insertKeyRecord(key)),
      getApiKey: (keyId) => run(() => getKey(keyId)),
      listApiKeys: (orgId) => run(() => (keysOfOrg.all(orgId) as ApiKeyRow[]).map(toApiKey)),
      updateApiKey: (keyId, patch) => run(() => updateKey.immediate(keyId, patch)),
      touchApiKey: (keyId, at) =>
        run(() => {
          touch.run(at, keyId, at);
        }),
      appendAudit: (record) => run(() => insertAuditRecord(record)),
      listAudit: (orgId, options) => run(() => listAudit(orgId, options)),
    },
    writes: { getKey, insertKey: insertKeyRecord, updateKey, insertAudit: insertAuditRecord },
  };
}
