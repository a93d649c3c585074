// Permission bits and owners of the mount's versioned files and directories (issue 15). `chmod 600
// secret.key` must leave the file 0600, across restarts too; only the owner's exec bit is part of a
// version (the engine's `executable`), so the rest is kept here, per path, in the daemon's state DB
// (`mount_attrs`, a table the mount host owns). A rename moves a path's row (a directory's, with
// everything below it); a removal drops it. Only values that differ from the defaults (0644 or 0755
// for a file as its exec bit says, 0755 for a directory, the mount's owner) have a row, so a tree
// unpacked with the usual modes adds none. Files in the backing directory (ignored, unstorable names)
// keep theirs in that filesystem.
import type Database from 'better-sqlite3';
import type { Logger } from 'pino';
import { batchedRows } from './batched-rows.js';
import { isWithin, parentOf } from './paths.js';

export interface PathAttrs {
  /** permission bits, setuid/setgid/sticky included (0o7777); a special's row holds its file type instead (markSpecial) */
  perm: number;
  uid: number;
  gid: number;
}

/** Where the rows live; `null` keeps them in memory only (tests of the mount state without a home). */
export interface AttrRows {
  list(): Array<{ path: string } & PathAttrs>;
  put(path: string, attrs: PathAttrs): void;
  remove(path: string): void;
}

export class MountAttrs {
  readonly #rows = new Map<string, PathAttrs>();

  constructor(
    private readonly store: AttrRows | null,
    private readonly owner: { uid: number; gid: number },
  ) {
    for (const { path, ...attrs } of store?.list() ?? []) this.#rows.set(path, attrs);
  }

  /** What `path` shows: its row, or the defaults (`exec` for a file: the versioned exec bit). */
  of(path: string, kind: 'file' | 'dir', executable = false): PathAttrs {
    const row = this.#rows.get(path);
    const perm = (row?.perm ?? defaultPerm(kind, executable)) & 0o7777;
    // The versioned exec bit wins for the owner's x (a pulled or restored version may change it).
    const shown = kind === 'dir' ? perm : executable ? perm | 0o100 : perm & ~0o100;
    return { perm: shown, uid: row?.uid ?? this.owner.uid, gid: row?.gid ?? this.owner.gid };
  }

  /** Sets what is given (undefined keeps the current value); a row only when it differs from the defaults. */
  set(path: string, kind: 'file' | 'dir', executable: boolean, change: Partial<PathAttrs>): PathAttrs {
    const current = this.of(path, kind, executable);
    const next = { perm: (change.perm ?? current.perm) & 0o7777, uid: change.uid ?? current.uid, gid: change.gid ?? current.gid };
    if (next.perm === defaultPerm(kind, (next.perm & 0o100) !== 0) && next.uid === this.owner.uid && next.gid === this.owner.gid) {
      if (this.#rows.delete(path)) this.store?.remove(path);
    } else {
      this.#rows.set(path, next);
      this.store?.put(path, next);
    }
    return next;
  }

  /**
   * A new file or directory: `perm` as its creator asked (the kernel applied the umask), not what an
   * earlier one at that name had, owned by its creator (the mount's owner when not known). In a setgid
   * directory it takes the directory's group, and a new directory the setgid bit too (as ext4 does).
   */
  created(path: string, kind: 'file' | 'dir', executable: boolean, perm: number, creator?: { uid: number; gid: number }): void {
    this.remove(path, kind === 'dir');
    const group = this.groupFor(path, creator);
    const inherit = (this.#rows.get(parentOf(path))?.perm ?? 0) & 0o2000;
    this.set(path, kind, executable, { perm: kind === 'dir' ? perm | inherit : perm, uid: creator?.uid ?? this.owner.uid, gid: group });
  }

  /** The group a new entry at `path` gets: the parent's in a setgid directory, else its creator's. */
  groupFor(path: string, creator?: { uid: number; gid: number }): number {
    const parent = this.#rows.get(parentOf(path));
    if (parent !== undefined && (parent.perm & 0o2000) !== 0) return parent.gid;
    return creator?.gid ?? this.owner.gid;
  }

  /**
   * FIFOs, sockets and device nodes at versionable names live in the backing directory, unversioned;
   * their row (the file type bits in `perm`) is how a lookup knows to look there, and it moves and
   * goes with renames and removals like any other row. Their modes and owners are the backing node's.
   */
  markSpecial(path: string, type: number): void {
    this.remove(path);
    this.#rows.set(path, { perm: type & S_IFMT, uid: this.owner.uid, gid: this.owner.gid });
    this.store?.put(path, { perm: type & S_IFMT, uid: this.owner.uid, gid: this.owner.gid });
  }

  isSpecial(path: string): boolean {
    if (this.#rows.size === 0) return false;
    return ((this.#rows.get(path)?.perm ?? 0) & S_IFMT) !== 0;
  }

  /** `from` is now at `to` (a directory: with everything below it); what was at `to` is gone. */
  move(from: string, to: string, dir = false): void {
    this.remove(to, dir);
    if (this.#rows.size === 0) return;
    const paths = dir ? [...this.#rows.keys()].filter((path) => isWithin(path, from)) : this.#rows.has(from) ? [from] : [];
    for (const path of paths) {
      const attrs = this.#rows.get(path)!;
      const moved = `${to}${path.slice(from.length)}`;
      this.#rows.delete(path);
      this.store?.remove(path);
      this.#rows.set(moved, attrs);
      this.store?.put(moved, attrs);
    }
  }

  /** `path` is gone (a directory: with everything below it). Cheap when nothing has a row. */
  remove(path: string, dir = false): void {
    if (this.#rows.size === 0) return;
    const paths = dir ? [...this.#rows.keys()].filter((key) => isWithin(key, path)) : this.#rows.has(path) ? [path] : [];
    for (const key of paths) {
      this.#rows.delete(key);
      this.store?.remove(key);
    }
  }
}

const S_IFMT = 0o170000;

export function defaultPerm(kind: 'file' | 'dir', executable: boolean): number {
  return kind === 'dir' || executable ? 0o755 : 0o644;
}

/** The rows in the daemon's state DB, written at the end of the event-loop turn that set them (batched-rows.ts). */
export function attrRowsIn(db: Database.Database, projectId: string, logger: Logger): AttrRows {
  db.exec(`CREATE TABLE IF NOT EXISTS mount_attrs (
    project_id TEXT NOT NULL, path TEXT NOT NULL, perm INTEGER NOT NULL, uid INTEGER NOT NULL, gid INTEGER NOT NULL,
    PRIMARY KEY (project_id, path)) WITHOUT ROWID`);
  const put = db.prepare('INSERT OR REPLACE INTO mount_attrs (project_id, path, perm, uid, gid) VALUES (?, ?, ?, ?, ?)');
  const remove = db.prepare('DELETE FROM mount_attrs WHERE project_id = ? AND path = ?');
  const queue = batchedRows<PathAttrs>(db, logger, 'file modes and owners', (path, attrs) => {
    if (attrs === null) remove.run(projectId, path);
    else put.run(projectId, path, attrs.perm, attrs.uid, attrs.gid);
  });
  return {
    list: () =>
      db.prepare<[string], { path: string } & PathAttrs>('SELECT path, perm, uid, gid FROM mount_attrs WHERE project_id = ?').all(projectId),
    put: (path, attrs) => queue(path, { ...attrs }),
    remove: (path) => queue(path, null),
  };
}
