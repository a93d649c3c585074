import { StrataError } from '../errors.js';

/**
 * Where a caller that must not migrate (fsck, gc, admin commands) stands, for SQLite and Postgres
 * alike: `current` 0 is no Strata tables at all.
 */
export function checkSchemaVersion(current: number, supported: number): void {
  if (current === 0) throw new StrataError('NO_STRATA_DATA', { message: 'The metadata database has no Strata tables', details: { reason: 'no-tables' } });
  if (current > supported) {
    throw new StrataError('STORAGE_ERROR', {
      message: `The metadata database has schema version ${current}, newer than this Strata supports (${supported})`,
      details: { schemaVersion: current, supported },
    });
  }
  if (current < supported) {
    throw new StrataError('SCHEMA_NOT_CURRENT', {
      message: `The metadata database has schema version ${current}; this Strata needs ${supported}: migrate it first (a server's storage: \`strata serve --migrate-only\`; a workstation's home: start \`strata daemon\` once)`,
      details: { schemaVersion: current, supported },
    });
  }
}
