// What a workstation knew about a path its disk got wrong, printed with a convergence failure: the
// failures left open were the ones a report could not explain (seed 47002 path 12: wsA lacked the
// head's `a/a` and said in sync; neither the replay nor 26 rounds by hand did it again). With this, the
// report itself says which of the three parts disagreed: the engine's history of the path (what the
// station recorded and pulled), the watch index row (what the station last put on or took from its
// disk), or the feed cursor (how far its rounds brought the engine to disk).

import { join } from 'node:path';
import Database from 'better-sqlite3';
import type { VersionRecord } from '../../engine/types.js';
import type { Station } from './sync-world.js';

/** At most this many paths of a station are explained (a report stays readable). */
const MAX_PATHS = 3;

export async function explainPaths(station: Station, paths: string[]): Promise<string[]> {
  const lines: string[] = [];
  const { ws } = station;
  const state = readState(ws.home, ws.projectId, paths.slice(0, MAX_PATHS));
  lines.push(`${station.name} (${ws.mode}): feed cursor ${state.cursor}`);
  for (const path of paths.slice(0, MAX_PATHS)) {
    let history: string;
    try {
      const page = await ws.api<{ items: VersionRecord[] }>('GET', ws.projectPath(`/history?path=${encodeURIComponent(path)}&limit=6`));
      history = page.items.map((v) => `${v.kind}${v.contentHash === null ? '' : ` ${v.contentHash.slice(7, 15)} ${v.size} B`} by ${v.actor.name} at ${v.timestamp}${v.versionId === undefined ? '' : ` (${v.versionId})`}`).join(' | ') || 'none';
    } catch (error) {
      history = `unreadable (${(error as Error).message})`;
    }
    const row = state.rows.get(path);
    lines.push(`  ${path}: history (newest first) ${history}; index row ${row === undefined ? 'none' : `${row.content_hash.slice(7, 15)} ${row.size} B version ${row.version_id}`}`);
  }
  return lines;
}

interface IndexRow {
  path: string;
  size: number;
  content_hash: string;
  version_id: string;
}

/** The daemon's state, read beside it (WAL: a reader does not disturb the running daemon). */
function readState(home: string, projectId: string, paths: string[]): { cursor: string; rows: Map<string, IndexRow> } {
  let db: Database.Database | null = null;
  try {
    db = new Database(join(home, 'daemon', 'state.sqlite'), { readonly: true, fileMustExist: true });
    db.pragma('busy_timeout = 2000');
    const flag = db.prepare('SELECT value FROM project_flags WHERE project_id = ? AND key = ?').get(projectId, 'engineFeedSeq') as { value: string } | undefined;
    const row = db.prepare('SELECT path, size, content_hash, version_id FROM watch_index WHERE project_id = ? AND path = ?');
    const rows = new Map<string, IndexRow>();
    for (const path of paths) {
      const found = row.get(projectId, path) as IndexRow | undefined;
      if (found !== undefined) rows.set(path, found);
    }
    return { cursor: flag?.value ?? 'none', rows };
  } catch (error) {
    return { cursor: `unreadable (${(error as Error).message})`, rows: new Map() };
  } finally {
    db?.close();
  }
}
