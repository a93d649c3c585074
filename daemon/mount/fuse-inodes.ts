// The inode table of a mount: the numbers the kernel knows (lookup counts, forget) and the path each
// stands for (parent + name, so renaming a directory moves everything below it at once).

const ROOT = 1;
const S_IFMT = 0o170000;

export interface Inode {
  parent: number;
  name: string;
  nlookup: number;
  type: number;
  /** open handles (files) */
  opens: number;
  /** renamed to a `.fuse_hidden*` name because it was removed while open; unlinked at the last release */
  hidden: boolean;
}

/** Serves one mount: the inode table and the request → FuseOps translation. */
export class InodeTable {
  private readonly nodes = new Map<number, Inode>([[ROOT, { parent: 0, name: '', nlookup: 1, type: 0o040000, opens: 0, hidden: false }]]);
  private readonly children = new Map<string, number>();
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

  detach(parent: number, name: string): void {
    this.children.delete(`${parent}/${name}`);
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
    let path = '';
    for (let current = ino; current !== ROOT; ) {
      const node = this.nodes.get(current);
      if (node === undefined) return null;
      path = `/${node.name}${path}`;
      current = node.parent;
    }
    return path === '' ? '/' : path;
  }

  childPath(parent: number, name: string): string | null {
    const dir = this.pathOf(parent);
    if (dir === null) return null;
    return dir === '/' ? `/${name}` : `${dir}/${name}`;
  }

  /** The inode for `name` in `parent`, counted as looked up once more (the kernel now holds it). */
  remember(parent: number, name: string, mode: number): number {
    const key = `${parent}/${name}`;
    const type = mode & S_IFMT;
    let ino = this.children.get(key);
    let node = ino === undefined ? undefined : this.nodes.get(ino);
    // A path that changed kind (a restore put a file where a directory was) gets a new inode: the
    // kernel treats an inode whose type changed as bad.
    if (ino === undefined || node === undefined || node.type !== type) {
      ino = this.nextIno++;
      node = { parent, name, nlookup: 0, type, opens: 0, hidden: false };
      this.nodes.set(ino, node);
      this.children.set(key, ino);
    }
    node.nlookup += 1;
    return ino;
  }

  forget(ino: number, count: number): void {
    const node = this.nodes.get(ino);
    if (node === undefined || ino === ROOT) return;
    node.nlookup -= count;
    if (node.nlookup > 0) return;
    this.nodes.delete(ino);
    const key = `${node.parent}/${node.name}`;
    if (this.children.get(key) === ino) this.children.delete(key);
  }

  /** The open file named `name` in `parent`, if any. */
  openNode(parent: number, name: string): number | undefined {
    const ino = this.children.get(`${parent}/${name}`);
    const node = ino === undefined ? undefined : this.nodes.get(ino);
    return node !== undefined && node.opens > 0 ? ino : undefined;
  }

}
