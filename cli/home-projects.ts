// The projects a home's metadata holds, with their names, read without a daemon: `strata status`
// lists every project of the home, running or not (issue 18).
//
// Read-only and straight from the database file: opening it as a repository would migrate it (a
// write) and start a checkpointer, neither of which a status line may do while a daemon — or a
// daemon of a newer Strata — owns the home. WAL lets this reader run next to a running daemon.

import { existsSync } from 'node:fs';
import { homeLayout } from '../engine/local.js';

export interface HomeProject {
  projectId: string;
  name: string;
}

/** The home's projects by name; empty when the home has no metadata yet. */
export async function readHomeProjects(home: string): Promise<HomeProject[]> {
  const file = homeLayout(home).metadata;
  if (!existsSync(file)) return [];
  const Database = (await import('better-sqlite3')).default;
  const db = new Database(file, { readonly: true, fileMustExist: true, timeout: 5_000 });
  try {
    return db.prepare('SELECT project_id AS projectId, name FROM projects ORDER BY name, project_id').all() as HomeProject[];
  } finally {
    db.close();
  }
}
