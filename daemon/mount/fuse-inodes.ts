// The inode table of a mount: the numbers the kernel knows (lookup counts, forget) and the path each
// stands for (parent + name, so renaming a directory moves everything below it at once). A file with
// several names (hard links) is one inode: requests about it use its first name the kernel knows,
// and the others are kept as aliases to take over when that one goes.

const ROOT = 1;
const S_IFMT = 0o170000;

export interface Inode {
  parent: number;
  name: string;
  nlookup: number;
  type: number;
  /** open handles (files) */
  opens: number;
  /** their fh numbers */
  fhs?: Set<number>;
  /** renamed to a `.fuse_hidden*` name because it was removed while open; unlinked at the last release */
  hidden: boolean;
  /** its other names the kernel knows (`parent/name` keys), for a file with several */
  aliases?: Set<string>;
  /** the key every name of this file answers with (FuseStat.link) */
  link?: string;
  /**
   * A name of the file the kernel has not looked up (after a restart), as a path: requests about it
   * use this once its known names are gone.
   */
  fallback?: string;
  /** lost its last name (unlinked, or replaced by a rename) with nothing open: it names nothing (retire) */
  retired?: boolean;
}

/** A `parent/name` key of the table as its two parts. */
function splitKey(key: string): [number, string] {
  const slash = key.indexOf('/');
  return [Number(key.slice(0, slash)), key.slice(slash + 1)];
}

/** Serves one mount: the inode table and the request → FuseOps translation. */
export class InodeTable {
  private readonly nodes = new Map<number, Inode>([[ROOT, { parent: 0, name: '', nlookup: 1, type: 0o040000, opens: 0, hidden: false }]]);
  private readonly children = new Map<string, number>();
  /** FuseStat.link → the inode of that file */
  private readonly byLink = new Map<string, number>();
  private nextIno = ROOT + 1;

  node(ino: number): Inode | undefined {
    return this.nodes.get(ino);
  }

  child(parent: number, name: string): number | undefined {
    return this.children.get(`${parent}/${name}`);
  }

  setChild(parent: number, name: string, ino: number): void {
    this.children.set(`${parent}/${name}`, ino);
  }

  /** `name` in `parent` is gone; a file's alias takes over as its name when it was the one used. */
  detach(parent: number, name: string): void {
    const key = `${parent}/${name}`;
    const ino = this.children.get(key);
    this.children.delete(key);
    const node = ino === undefined ? undefined : this.nodes.get(ino);
    if (node === undefined || node.link === undefined) return;
    node.aliases?.delete(key);
    if (`${node.parent}/${node.name}` !== key) return;
    const [next] = node.aliases ?? [];
    if (next === undefined) {
      // No name left that the kernel knows: a new file may reuse the backing inode number of its key.
      if (this.byLink.get(node.link) === ino) this.byLink.delete(node.link);
      return;
    }
    this.promote(node, next);
  }

  /** The alias `key` (`parent/name`) becomes the name the file answers by. */
  private promote(node: Inode, key: string): void {
    node.aliases?.delete(key);
    const [parent, name] = splitKey(key);
    node.parent = parent;
    node.name = name;
  }

  /** `name` in `parent` is (now) a name of `ino` too (a link, a rename onto it). */
  addName(ino: number, parent: number, name: string): void {
    const node = this.nodes.get(ino);
    if (node === undefined) return;
    const key = `${parent}/${name}`;
    const current = this.children.get(key);
    if (current !== undefined && current !== ino) this.detach(parent, name);
    this.children.set(key, ino);
    node.fallback = undefined;
    const primary = `${node.parent}/${node.name}`;
    if (primary === key) return;
    if (this.children.get(primary) !== ino) {
      node.parent = parent;
      node.name = name;
      return;
    }
    node.aliases ??= new Set();
    node.aliases.add(key);
  }

  hasAliases(ino: number): boolean {
    return (this.nodes.get(ino)?.aliases?.size ?? 0) > 0;
  }

  /** The file's names may all be unknown to the kernel now while it is still open: `path` still reaches it. */
  keepReachable(ino: number, path: string): void {
    const node = this.nodes.get(ino);
    if (node === undefined || this.children.get(`${node.parent}/${node.name}`) === ino) return;
    node.fallback = path;
    // A lookup of that name finds this inode again.
    if (node.link !== undefined) this.byLink.set(node.link, ino);
  }

  /** Answers for `ino` carry this link key: later lookups of its other names find the same inode. */
  noteLink(ino: number, link: string | undefined): void {
    if (link === undefined) return;
    const node = this.nodes.get(ino);
    if (node === undefined || node.link === link) return;
    node.link = link;
    this.byLink.set(link, ino);
  }

  /** Every inode the kernel knows. */
  inodes(): number[] {
    return [...this.nodes.keys()];
  }

  inoOf(path: string): number | undefined {
    let ino = ROOT;
    for (const name of path.split('/')) {
      if (name === '') continue;
      const next = this.children.get(`${ino}/${name}`);
      if (next === undefined) return undefined;
      ino = next;
    }
    return ino;
  }

  pathOf(ino: number): string | null {
    if (ino === ROOT) return '/';
    const node = this.nodes.get(ino);
    if (node === undefined || node.retired === true) return null;
    if (node.fallback !== undefined) return node.fallback;
    // Its name now stands for another inode (a restore or a conflict copy put another kind of file
    // there, which the kernel looked up afresh): that path is not this file. Taken for it, a link(2)
    // of this inode linked the other file and the kernel answered EIO for the type it got back. (An
    // inode with handles open keeps its path: requests about it go to those handles, staleHandle.)
    const primary = `${node.parent}/${node.name}`;
    const current = this.children.get(primary);
    const path = current !== undefined && current !== ino && node.opens === 0 ? null : this.pathIn(node.parent, node.name);
    if (path !== null || node.aliases === undefined) return path;
    // The directory of the name this file answered by is gone from the table (the kernel dropped
    // that name's dentry and then forgot the directory; the inode lives on through its other names):
    // a name whose directories the kernel still knows takes over. Left as it was, every request about
    // the file failed with ENOENT — a release too, which leaked its handle and kept the mount from
    // ever going idle — and `link` of it said ENOENT (fsstress, hard links below renamed directories).
    for (const key of node.aliases) {
      if (this.children.get(key) !== ino) continue;
      const other = this.pathIn(...splitKey(key));
      if (other === null) continue;
      if (current === ino) this.children.delete(primary);
      this.promote(node, key);
      return other;
    }
    return null;
  }

  /** `name` in directory `parent` as a path, or null when a directory on the way is gone. */
  private pathIn(parent: number, name: string): string | null {
    let path = `/${name}`;
    for (let current = parent; current !== ROOT; ) {
      const dir = this.nodes.get(current);
      if (dir === undefined || dir.retired === true) return null;
      path = `/${dir.name}${path}`;
      current = dir.parent;
    }
    return path;
  }

  childPath(parent: number, name: string): string | null {
    const dir = this.pathOf(parent);
    if (dir === null) return null;
    return dir === '/' ? `/${name}` : `${dir}/${name}`;
  }

  /** The inode for `name` in `parent`, counted as looked up once more (the kernel now holds it). */
  remember(parent: number, name: string, mode: number, link?: string): number {
    const key = `${parent}/${name}`;
    const type = mode & S_IFMT;
    let ino = this.children.get(key);
    let node = ino === undefined ? undefined : this.nodes.get(ino);
    // Another name of a file the kernel knows already: the same inode (link(2) made them one file).
    const shared = link === undefined ? undefined : this.byLink.get(link);
    const sharedNode = shared === undefined ? undefined : this.nodes.get(shared);
    if (shared !== undefined && sharedNode !== undefined && shared !== ino && sharedNode.type === type) {
      this.addName(shared, parent, name);
      ino = shared;
      node = sharedNode;
    }
    // A path that changed kind (a restore put a file where a directory was) gets a new inode: the
    // kernel treats an inode whose type changed as bad.
    if (ino === undefined || node === undefined || node.type !== type) {
      ino = this.nextIno++;
      node = { parent, name, nlookup: 0, type, opens: 0, hidden: false };
      this.nodes.set(ino, node);
      this.children.set(key, ino);
    }
    node.nlookup += 1;
    this.noteLink(ino, link);
    return ino;
  }

  forget(ino: number, count: number): void {
    const node = this.nodes.get(ino);
    if (node === undefined || ino === ROOT) return;
    node.nlookup -= count;
    if (node.nlookup > 0) return;
    this.nodes.delete(ino);
    for (const key of [`${node.parent}/${node.name}`, ...(node.aliases ?? [])]) if (this.children.get(key) === ino) this.children.delete(key);
    if (node.link !== undefined && this.byLink.get(node.link) === ino) this.byLink.delete(node.link);
  }

  /**
   * A handle open on `ino` when its name has moved on to a new inode (a restore over an open file,
   * fuse-lowlevel.ts invalidate): requests about it, fstat's getattr too, are that handle's file.
   */
  staleHandle(ino: number): number | undefined {
    const node = this.nodes.get(ino);
    if (node?.fhs === undefined || node.fhs.size === 0 || this.children.get(`${node.parent}/${node.name}`) === ino) return undefined;
    const [fh] = node.fhs;
    return fh;
  }

  /**
   * `ino` lost its last name (an unlink, a rename over it) and nothing has it open: requests about it
   * (a descriptor opened with O_PATH, a cwd) find nothing, ENOENT, instead of whatever took the name.
   * They were about the new file: a symbolic link replaced by a file answered readlink with EINVAL
   * and fstat with EIO (the kernel takes an inode whose type changes for a bad one; fsstress).
   */
  retire(ino: number): void {
    const node = this.nodes.get(ino);
    if (node === undefined || ino === ROOT || node.opens > 0 || node.hidden) return;
    // A hard link's other name took over, or the name was reused for this very inode.
    if (this.children.get(`${node.parent}/${node.name}`) === ino || node.fallback !== undefined) return;
    node.retired = true;
  }

  /** The open file named `name` in `parent`, if any. */
  openNode(parent: number, name: string): number | undefined {
    const ino = this.children.get(`${parent}/${name}`);
    const node = ino === undefined ? undefined : this.nodes.get(ino);
    return node !== undefined && node.opens > 0 ? ino : undefined;
  }

}
