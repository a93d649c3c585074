// The two sides of the check after fsstress: the tree the mount shows and the tree the engine holds,
// each as path → sha256 of a regular file's bytes, or `-> target` for a symbolic link (directories
// left out: the engine versions files and links). A name the mount lists but cannot look up is
// reported as such (a difference), not a crash of the walk.

import type { SnapshotEntry } from '../../engine/types.js';
import { type Control, runPython, sha256 } from './lib.js';

const WALK = `
import hashlib, json, os, stat, sys
root = sys.argv[1]
out = {}
for parent, dirs, files in os.walk(root):
    for name in dirs + files:
        full = os.path.join(parent, name)
        rel = os.path.relpath(full, os.path.dirname(root))
        try:
            st = os.lstat(full)
        except FileNotFoundError:
            out[rel] = 'listed, but lstat says ENOENT'
            continue
        if stat.S_ISLNK(st.st_mode):
            out[rel] = '-> ' + os.readlink(full)
        elif stat.S_ISREG(st.st_mode):
            try:
                with open(full, 'rb') as f:
                    out[rel] = hashlib.sha256(f.read()).hexdigest()
            except FileNotFoundError:
                out[rel] = 'lstat finds a file, but open says ENOENT'

print(json.dumps(out))
`;

/** `root` (relative to `cwd`, the mount) walked by a child process, so a hang cannot wedge the caller. */
export async function mountTree(cwd: string, root: string, timeoutMs = 60_000): Promise<Record<string, string>> {
  const walk = await runPython(['-c', WALK, root], cwd, timeoutMs);
  if (walk.code !== 0) throw new Error(`walking ${root} exited ${walk.code}: ${walk.stderr}`);
  return JSON.parse(walk.stdout) as Record<string, string>;
}

/** The engine's current files and links under `prefix` (`dir/`), from a snapshot taken now. */
export async function engineTree(control: Control, prefix: string): Promise<Record<string, string>> {
  const snapshot = await control.api<{ snapshotId: string }>('POST', control.project('/fs/snapshots'), { message: 'tree check' });
  const entries: SnapshotEntry[] = [];
  let cursor: string | undefined;
  do {
    const after = cursor === undefined ? '' : `&cursor=${encodeURIComponent(cursor)}`;
    const page = await control.api<{ items: SnapshotEntry[]; nextCursor?: string }>(
      'GET',
      control.project(`/fs/snapshots/${snapshot.snapshotId}/entries?prefix=${encodeURIComponent(prefix)}&limit=1000${after}`),
    );
    entries.push(...page.items);
    cursor = page.nextCursor;
  } while (cursor !== undefined);
  const tree: Record<string, string> = {};
  for (const entry of entries) {
    const bytes = await control.readVersion(entry.versionId);
    tree[entry.path] = entry.symlink ? `-> ${bytes.toString()}` : sha256(bytes);
  }
  return tree;
}

/** Paths whose two sides differ, each with both sides (`absent` for a side without it). */
export function treeDifferences(mount: Record<string, string>, engine: Record<string, string>): Array<{ path: string; mount: string; engine: string }> {
  const paths = [...new Set([...Object.keys(mount), ...Object.keys(engine)])].sort();
  return paths.filter((path) => mount[path] !== engine[path]).map((path) => ({ path, mount: mount[path] ?? 'absent', engine: engine[path] ?? 'absent' }));
}
