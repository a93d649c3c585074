import type { AuditRecord } from '../types.js';
import { isoTimestamp } from '../ports/world.js';
import type { AccessDeps } from './deps.js';

/**
 * Appends one audit record. Callers pass ids, roles and labels only: secrets (keys, HMACs, the pepper)
 * must never reach `details`, which is why this takes a narrow value type.
 */
export async function audit(
  deps: AccessDeps,
  entry: { orgId: string; actorId: string; action: string; target: string; details: Record<string, string | number | boolean | null> },
): Promise<AuditRecord> {
  const record: AuditRecord = {
    auditId: deps.ids.uuid(),
    orgId: entry.orgId,
    actorId: entry.actorId,
    action: entry.action,
    target: entry.target,
    details: entry.details,
    timestamp: isoTimestamp(deps.clock),
  };
  await deps.repository.access.appendAudit(record);
  return record;
}
