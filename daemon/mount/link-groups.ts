// Hard links among versioned files (issue 15): which names are one file. The engine versions paths and
// knows nothing of links, so a group is the mount's: its first name (the primary) holds the file's
// local state (the node, its modes and owners in attrs.ts, its times); every other name resolves to
// it (MountState.resolve). When the content changes, the primary's capture is copied to every other
// name as a version of its own (reconciler.ts mirror), and a new name gets one when it is made: each
// path's history is complete, and git export or a restore sees ordinary files.
//
// Groups are kept per path in the daemon's state DB (`mount_links`, next to `mount_attrs`), with the
// order of their names, so the primary (where the modes live) is the same after a restart. A group
// left with one name is dissolved: that name is an ordinary file again.
import type Database from 'better-sqlite3';
import type { Logger } from 'pino';
import { batchedRows } from './batched-rows.js';
import { isWithin } from './paths.js';

export interface LinkRow {
  path: string;
  group: number;
  /** order of the names in their group (the lowest is the primary) */
  seq: number;
}

/** Where the rows live; `null` keeps them in memory only (tests of the mount state without a home). */
export interface LinkRows {
  list(): LinkRow[];
  put(row: LinkRow): void;
  remove(path: string): void;
}

export class LinkGroups {
  /** group id → its names, primary first */
  readonly #members = new Map<number, string[]>();
  readonly #groupOf = new Map<string, number>();
  readonly #seq = new Map<string, number>();
  #nextGroup = 1;
  #nextSeq = 1;

  constructor(private readonly store: LinkRows | null) {
    const rows = (store?.list() ?? []).sort((a, b) => a.seq - b.seq);
    for (const { path, group, seq } of rows) {
      this.#place(path, group, seq);
      this.#nextGroup = Math.max(this.#nextGroup, group + 1);
      this.#nextSeq = Math.max(this.#nextSeq, seq + 1);
    }
    // A group a crash left with one name (its other row's removal was written, not this one's).
    for (const [group, names] of this.#members) if (names.length < 2) this.#dissolve(group);
  }

  /** Cheap check first: most mounts have no hard link at all. */
  get empty(): boolean {
    return this.#groupOf.size === 0;
  }

  has(path: string): boolean {
    return this.#groupOf.has(path);
  }

  /** The name that holds the file's local state; `path` itself when it has no other name. */
  primaryOf(path: string): string {
    if (this.#groupOf.size === 0) return path;
    const group = this.#groupOf.get(path);
    return group === undefined ? path : this.#members.get(group)![0]!;
  }

  /** Every name of `path`'s file, primary first ([path] when it has no other). */
  namesOf(path: string): readonly string[] {
    const group = this.#groupOf.get(path);
    return group === undefined ? [path] : this.#members.get(group)!;
  }

  /** The group's id (what the binding gives one inode), or undefined. */
  groupId(path: string): number | undefined {
    return this.#groupOf.get(path);
  }

  /** Names that are not their group's primary: each needs the primary's content as its version. */
  *secondaries(): Iterable<string> {
    for (const names of this.#members.values()) yield* names.slice(1);
  }

  /** Every linked name (a directory listing must show a new name before its first version). */
  paths(): Iterable<string> {
    return this.#groupOf.keys();
  }

  /** `name` is a new name of `existing`'s file. */
  add(existing: string, name: string): void {
    let group = this.#groupOf.get(existing);
    if (group === undefined) {
      group = this.#nextGroup++;
      this.#put(existing, group, this.#nextSeq++);
    }
    this.#put(name, group, this.#nextSeq++);
  }

  /**
   * `path` is no longer a name of its file. Returns the file's primary afterwards (null when `path`
   * had no other name); when `path` was the primary, the caller moves the local state there.
   */
  remove(path: string): string | null {
    const group = this.#groupOf.get(path);
    if (group === undefined) return null;
    const names = this.#members.get(group)!;
    names.splice(names.indexOf(path), 1);
    this.#drop(path);
    const primary = names[0]!;
    if (names.length < 2) this.#dissolve(group);
    return primary;
  }

  /** A rename: `from` (a directory: every name below it) is now `to`, in the same place of its group. */
  move(from: string, to: string, dir = false): void {
    if (this.#groupOf.size === 0) return;
    const paths = dir ? [...this.#groupOf.keys()].filter((path) => isWithin(path, from)) : this.#groupOf.has(from) ? [from] : [];
    for (const path of paths) {
      const group = this.#groupOf.get(path)!;
      const seq = this.#seq.get(path)!;
      const moved = `${to}${path.slice(from.length)}`;
      const names = this.#members.get(group)!;
      names[names.indexOf(path)] = moved;
      this.#drop(path);
      this.#groupOf.set(moved, group);
      this.#seq.set(moved, seq);
      this.store?.put({ path: moved, group, seq });
    }
  }

  #put(path: string, group: number, seq: number): void {
    this.#place(path, group, seq);
    this.store?.put({ path, group, seq });
  }

  #place(path: string, group: number, seq: number): void {
    let names = this.#members.get(group);
    if (names === undefined) {
      names = [];
      this.#members.set(group, names);
    }
    names.push(path);
    this.#groupOf.set(path, group);
    this.#seq.set(path, seq);
  }

  #drop(path: string): void {
    this.#groupOf.delete(path);
    this.#seq.delete(path);
    this.store?.remove(path);
  }

  #dissolve(group: number): void {
    for (const path of this.#members.get(group) ?? []) this.#drop(path);
    this.#members.delete(group);
  }
}

/** The rows in the daemon's state DB, written at the end of the event-loop turn that set them (batched-rows.ts). */
export function linkRowsIn(db: Database.Database, projectId: string, logger: Logger): LinkRows {
  db.exec(`CREATE TABLE IF NOT EXISTS mount_links (
    project_id TEXT NOT NULL, path TEXT NOT NULL, grp INTEGER NOT NULL, seq INTEGER NOT NULL,
    PRIMARY KEY (project_id, path)) WITHOUT ROWID`);
  const put = db.prepare('INSERT OR REPLACE INTO mount_links (project_id, path, grp, seq) VALUES (?, ?, ?, ?)');
  const remove = db.prepare('DELETE FROM mount_links WHERE project_id = ? AND path = ?');
  const queue = batchedRows<LinkRow>(db, logger, 'hard links', (path, row) => {
    if (row === null) remove.run(projectId, path);
    else put.run(projectId, path, row.group, row.seq);
  });
  return {
    list: () => db.prepare<[string], LinkRow>('SELECT path, grp AS "group", seq FROM mount_links WHERE project_id = ?').all(projectId),
    put: (row) => queue(row.path, { ...row }),
    remove: (path) => queue(path, null),
  };
}
