// Sync's map of local version ids to the server's (see AliasTable).
import type { DaemonState } from '../state.js';

/**
 * Local version id → the server's, where they differ: a conflict copy made here (the server kept the
 * original id at the copy's path) and a file both sides made alike. A later change here is then based
 * on the version the server knows, instead of looking like a conflict.
 */
export class AliasTable {
  readonly #get;
  readonly #put;

  constructor(state: DaemonState) {
    state.db.exec('CREATE TABLE IF NOT EXISTS sync_alias (local_id TEXT PRIMARY KEY, remote_id TEXT NOT NULL) WITHOUT ROWID');
    this.#get = state.db.prepare('SELECT remote_id FROM sync_alias WHERE local_id = ?').pluck();
    this.#put = state.db.prepare('INSERT OR REPLACE INTO sync_alias (local_id, remote_id) VALUES (?, ?)');
  }

  remoteOf(localId: string): string {
    return (this.#get.get(localId) as string | undefined) ?? localId;
  }

  set(localId: string, remoteId: string): void {
    this.#put.run(localId, remoteId);
  }
}
