import { AsyncLocalStorage } from 'node:async_hooks';
import type { AccessChange } from '../ports/metadata-repository.js';
import { isoTimestamp } from '../ports/world.js';
import type { AuditRecord } from '../types.js';
import type { AccessDeps } from './deps.js';

/**
 * The request an access change is made for: a host (the control API) runs each request inside it, so
 * every audit record names its request id and client address without threading them through every
 * function.
 */
export const auditOrigin = new AsyncLocalStorage<{ requestId: string; clientIp: string }>();

/**
 * One audit record, as a change to apply in the same transaction as what it records (an audited
 * change and its record commit together or not at all). Callers pass ids, roles and labels only:
 * secrets (keys, HMACs, the pepper) must never reach `details`, which is why this takes a narrow type.
 */
export function auditChange(
  deps: AccessDeps,
  entry: { orgId: string; actorId: string; action: string; target: string; details: Record<string, string | number | boolean | null> },
): AccessChange & { kind: 'appendAudit' } {
  const record: AuditRecord = {
    auditId: deps.ids.uuid(),
    orgId: entry.orgId,
    actorId: entry.actorId,
    action: entry.action,
    target: entry.target,
    details: entry.details,
    timestamp: isoTimestamp(deps.clock),
    requestId: auditOrigin.getStore()?.requestId ?? null,
    clientIp: auditOrigin.getStore()?.clientIp ?? null,
  };
  return { kind: 'appendAudit', record };
}

/**
 * Appends an audit record on its own, for changes that live outside the access tables (retention,
 * dataset rules, git receive): their own write has already committed through the engine.
 */
export async function audit(deps: AccessDeps, entry: Parameters<typeof auditChange>[1]): Promise<AuditRecord> {
  const { record } = auditChange(deps, entry);
  await deps.repository.access.appendAudit(record);
  return record;
}
