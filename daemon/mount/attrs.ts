// Permission bits and owners of the mount's versioned files and directories (issue 15). `chmod 600
// secret.key` must leave the file 0600, across restarts too; only the owner's exec bit is part of a
// version (the engine's `executable`), so the rest is kept here, per path, in the daemon's state DB
// (`mount_attrs`, a table the mount host owns). A rename moves a path's row (a directory's, with
// everything below it); a removal drops it. Only values that differ from the defaults (0644 or 0755
// for a file as its exec bit says, 0755 for a directory, the mount's owner) have a row, so a tree
// unpacked with the usual modes adds none. Files in the backing directory (ignored, unstorable names)
// keep theirs in that filesystem.
//
// Extended attributes live in the same row (issue 39 item 4): `user.*`, `trusted.*`, `security.*`
// and the POSIX ACLs (acl.ts), whose access ACL and the mode are kept in step both ways. Like the
// mode, they are the path's, not part of a version: a restore or a pulled version keeps the ones the
// path has, a rename takes them along, a removal drops them.
import type Database from 'better-sqlite3';
import type { Logger } from 'pino';
import { ACL_ACCESS, ACL_DEFAULT, chmodAcl, createMasq, isMinimal, modeOf, parseAcl, serializeAcl } from './acl.js';
import { batchedRows } from './batched-rows.js';
import { isWithin, parentOf } from './paths.js';

export interface PathAttrs {
  /** permission bits, setuid/setgid/sticky included (0o7777); a special's row holds its file type instead (markSpecial) */
  perm: number;
  uid: number;
  gid: number;
  /** extended attributes, name → value (absent or empty: none) */
  xattrs?: ReadonlyMap<string, Buffer>;
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

  /**
   * Sets what is given (undefined keeps the current value); a row only when it differs from the
   * defaults. A new mode goes into the access ACL too, when the path has one (chmod: posix_acl_chmod).
   */
  set(path: string, kind: 'file' | 'dir', executable: boolean, change: Partial<PathAttrs>): PathAttrs {
    const current = this.of(path, kind, executable);
    let xattrs = change.xattrs ?? this.#rows.get(path)?.xattrs;
    const perm = (change.perm ?? current.perm) & 0o7777;
    const access = change.perm === undefined ? undefined : xattrs?.get(ACL_ACCESS);
    const acl = access === undefined ? null : parseAcl(access);
    if (acl !== null) xattrs = new Map(xattrs).set(ACL_ACCESS, serializeAcl(chmodAcl(acl, perm)));
    const next: PathAttrs = { perm, uid: change.uid ?? current.uid, gid: change.gid ?? current.gid, ...(xattrs !== undefined && xattrs.size > 0 ? { xattrs } : {}) };
    this.#put(path, kind, next);
    return next;
  }

  /** The path's extended attribute `name`, or undefined. */
  xattr(path: string, name: string): Buffer | undefined {
    return this.#rows.get(path)?.xattrs?.get(name);
  }

  /** Whether any path has the extended attribute `name`. */
  anyXattr(name: string): boolean {
    for (const row of this.#rows.values()) if (row.xattrs?.has(name) === true) return true;
    return false;
  }

  /** The names of the path's extended attributes. */
  xattrNames(path: string): string[] {
    return [...(this.#rows.get(path)?.xattrs?.keys() ?? [])];
  }

  /**
   * Sets (or with null, removes) the path's extended attribute `name`. An access ACL sets the mode's
   * permission bits to what it means, and one the mode says all of is kept as the mode alone
   * (posix_acl_update_mode); a default ACL goes only on a directory. Returns the path's permission
   * bits after it, or a negative errno: a value that is no ACL (EINVAL), a default ACL on a file (EACCES).
   */
  setXattr(path: string, kind: 'file' | 'dir', executable: boolean, name: string, value: Buffer | null): number {
    const current = this.of(path, kind, executable);
    const xattrs = new Map(this.#rows.get(path)?.xattrs);
    let perm = current.perm;
    if (value === null) xattrs.delete(name);
    else if (name === ACL_ACCESS || name === ACL_DEFAULT) {
      const acl = parseAcl(value);
      if (acl === null) return -22;
      if (name === ACL_DEFAULT && kind !== 'dir') return -13;
      if (name === ACL_ACCESS) perm = (perm & ~0o777) | modeOf(acl);
      if (name === ACL_ACCESS && isMinimal(acl)) xattrs.delete(name);
      else xattrs.set(name, serializeAcl(acl));
    } else xattrs.set(name, Buffer.from(value));
    this.#put(path, kind, { perm, uid: current.uid, gid: current.gid, ...(xattrs.size > 0 ? { xattrs } : {}) });
    return perm;
  }

  /** Stores `attrs` as the path's row, or drops the row when they are the defaults. */
  #put(path: string, kind: 'file' | 'dir', attrs: PathAttrs): void {
    if (attrs.perm === defaultPerm(kind, (attrs.perm & 0o100) !== 0) && attrs.uid === this.owner.uid && attrs.gid === this.owner.gid && attrs.xattrs === undefined) {
      if (this.#rows.delete(path)) this.store?.remove(path);
      return;
    }
    this.#rows.set(path, attrs);
    this.store?.put(path, attrs);
  }

  /**
   * A new file or directory: `perm` as its creator asked, less its umask, or masked by its directory's
   * default ACL instead when it has one (which becomes the new entry's access ACL, and a directory's
   * default too); not what an earlier one at that name had; owned by its creator (the mount's owner
   * when not known). In a setgid directory it takes the directory's group, and a new directory the
   * setgid bit too (as ext4 does). Returns the permission bits it got.
   */
  created(path: string, kind: 'file' | 'dir', perm: number, creator?: { uid: number; gid: number; umask?: number }): number {
    this.remove(path, kind === 'dir');
    const group = this.groupFor(path, creator);
    const parent = this.#rows.get(parentOf(path));
    const inherit = (parent?.perm ?? 0) & 0o2000;
    // A default ACL of the directory takes the umask's place (posix_acl_create); a directory inherits it as its own default too.
    const inherited = parent?.xattrs?.get(ACL_DEFAULT);
    const acl = inherited === undefined ? null : parseAcl(inherited);
    const xattrs = new Map<string, Buffer>();
    if (acl !== null) {
      const masked = createMasq(acl, perm);
      perm = masked.mode;
      if (!isMinimal(masked.entries)) xattrs.set(ACL_ACCESS, serializeAcl(masked.entries));
      if (kind === 'dir') xattrs.set(ACL_DEFAULT, inherited!);
    } else perm &= ~(creator?.umask ?? 0);
    const mode = kind === 'dir' ? perm | inherit : perm;
    this.#put(path, kind, { perm: mode & 0o7777, uid: creator?.uid ?? this.owner.uid, gid: group, ...(xattrs.size > 0 ? { xattrs } : {}) });
    return mode & 0o7777;
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
  // Homes made before extended attributes were kept have no column for them.
  const columns = db.prepare<[], { name: string }>('PRAGMA table_info(mount_attrs)').all();
  if (!columns.some((column) => column.name === 'xattrs')) db.exec('ALTER TABLE mount_attrs ADD COLUMN xattrs BLOB');
  const put = db.prepare('INSERT OR REPLACE INTO mount_attrs (project_id, path, perm, uid, gid, xattrs) VALUES (?, ?, ?, ?, ?, ?)');
  const remove = db.prepare('DELETE FROM mount_attrs WHERE project_id = ? AND path = ?');
  const queue = batchedRows<PathAttrs>(db, logger, 'file modes, owners and extended attributes', (path, attrs) => {
    if (attrs === null) remove.run(projectId, path);
    else put.run(projectId, path, attrs.perm, attrs.uid, attrs.gid, attrs.xattrs === undefined ? null : packXattrs(attrs.xattrs));
  });
  return {
    list: () =>
      db
        .prepare<[string], { path: string; perm: number; uid: number; gid: number; xattrs: Buffer | null }>('SELECT path, perm, uid, gid, xattrs FROM mount_attrs WHERE project_id = ?')
        .all(projectId)
        .map(({ xattrs, ...row }) => (xattrs === null ? row : { ...row, xattrs: unpackXattrs(xattrs) })),
    put: (path, attrs) => queue(path, { ...attrs }),
    remove: (path) => queue(path, null),
  };
}

/** Extended attributes as one blob: per attribute, u16 name length, the name (UTF-8), u32 value length, the value. */
function packXattrs(xattrs: ReadonlyMap<string, Buffer>): Buffer {
  const parts: Buffer[] = [];
  for (const [name, value] of xattrs) {
    const head = Buffer.alloc(2);
    head.writeUInt16LE(Buffer.byteLength(name));
    const size = Buffer.alloc(4);
    size.writeUInt32LE(value.length);
    parts.push(head, Buffer.from(name), size, value);
  }
  return Buffer.concat(parts);
}

function unpackXattrs(blob: Buffer): Map<string, Buffer> {
  const xattrs = new Map<string, Buffer>();
  for (let at = 0; at + 2 <= blob.length; ) {
    const nameLength = blob.readUInt16LE(at);
    const name = blob.subarray(at + 2, at + 2 + nameLength).toString();
    const valueLength = blob.readUInt32LE(at + 2 + nameLength);
    const start = at + 6 + nameLength;
    xattrs.set(name, Buffer.from(blob.subarray(start, start + valueLength)));
    at = start + valueLength;
  }
  return xattrs;
}
