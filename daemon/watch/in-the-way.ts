// A directory where the project wants a file or link (issue 38 item 10): `echo data > P; strata
// snapshot create; rm P; mkdir P; strata snapshot restore 1` recorded P's file version, left the
// directory, and printed "1 path changed" (a warning appeared in `strata status` only). Directories
// are not versioned, so one that holds nothing but directories holds no data: the file replaces it.
// One that holds anything else — files the project does not version (ignored names), or files not
// captured yet — cannot be replaced without losing them: the restore is refused before it records
// anything (ProjectHost.checkWritable), naming what is in the way.

import { lstat, readdir, rmdir, unlink } from 'node:fs/promises';
import { encodeName, showNameBytes } from '../../engine/raw-names.js';
import { openBeneath } from '../beneath.js';
import type { HostContext } from '../host.js';
import { lstatOrNull, unchangedSinceIndexed } from './examine.js';

/** Directories below a directory at most (a restore is refused rather than walking a huge tree). */
const MAX_WALK = 10_000;

/** `abs/child` as bytes when either is (names read as bytes: one that is not UTF-8 is a name all the same). */
function under(abs: string | Buffer, child: Buffer): string | Buffer {
  return typeof abs === 'string' && encodeName(child) === child.toString('utf8') ? `${abs}/${child.toString('utf8')}` : Buffer.concat([Buffer.from(abs), Buffer.from('/'), child]);
}

const listRaw = (abs: string | Buffer) => readdir(abs, { encoding: 'buffer' });

/**
 * listRaw, or null when the directory is gone: what brings a pulled deletion to disk removes the
 * directories it empties, and may do so while a file is being brought to a directory's place (seed
 * 42000: the deletion of `a/a/b` and the file `a`, side by side; the write of `a` failed with
 * ENOENT and waited for its retry). A directory gone is no longer in the way.
 */
async function listOrGone(abs: string | Buffer): Promise<Buffer[] | null> {
  try {
    return await listRaw(abs);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw error;
  }
}

function split(path: string): { dir: string; name: string } {
  const slash = path.lastIndexOf('/');
  return { dir: slash === -1 ? '' : path.slice(0, slash), name: path.slice(slash + 1) };
}

/**
 * What below the directory at `path` is not a directory and not `removable` (a file the restore
 * itself removes), as a project path; null when `path` is no directory (or nothing below blocks).
 */
export async function blockingBelow(root: string, path: string, removable: (path: string) => boolean): Promise<string | null> {
  const { dir, name } = split(path);
  const parent = await openBeneath(root, dir, { create: false });
  if (parent.kind !== 'dir') return null;
  try {
    const top = parent.dir.entry(name);
    const st = await lstat(top).catch(() => null);
    if (st === null || !st.isDirectory()) return null;
    const queue: Array<{ abs: string | Buffer; rel: string }> = [{ abs: top, rel: path }];
    for (let walked = 0; queue.length > 0; walked++) {
      if (walked >= MAX_WALK) return `${path}/…`;
      const { abs, rel } = queue.shift()!;
      for (const child of await listRaw(abs)) {
        const childAbs = under(abs, child);
        // A name the project cannot record is never removable (shown with its stray bytes as \xHH).
        const recorded = encodeName(child);
        const childRel = `${rel}/${recorded ?? showNameBytes(child)}`;
        const childSt = await lstat(childAbs).catch(() => null);
        if (childSt === null) continue;
        if (childSt.isDirectory()) queue.push({ abs: childAbs, rel: childRel });
        else if (recorded === null || !removable(childRel)) return childRel;
      }
    }
    return null;
  } finally {
    await parent.dir.close();
  }
}

/**
 * Removes the directory at `abs` (a name in a directory reached without links, BeneathDir.entry) if
 * it holds nothing but directories; false when something else is in it (it is left as it was, but
 * for the empty subdirectories removed on the way).
 */
export async function removeEmptyTree(abs: string | Buffer): Promise<boolean> {
  for (const child of (await listOrGone(abs)) ?? []) {
    const childAbs = under(abs, child);
    const st = await lstat(childAbs).catch(() => null);
    if (st === null) continue;
    if (!st.isDirectory() || !(await removeEmptyTree(childAbs))) return false;
  }
  try {
    await rmdir(abs);
    return true;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return true;
    if (code === 'ENOTEMPTY' || code === 'EEXIST') return false;
    throw error;
  }
}

/**
 * The file or link at `path` stands where the project now has a directory (a path below it is to be
 * brought to disk): it is removed if it is content history has — its index row matches it — and the
 * project has no file at `path` any more; true when it was (or is gone already). Anything else is
 * left, and the path below waits (materialize warns). The sync model's defect 4: a file that
 * replaced a directory here, kept as a conflict copy because the project had files below that
 * directory from elsewhere (capture/pipeline.ts), stayed in the way of those files for good.
 */
export async function removeVersionedFileInTheWay(host: HostContext, path: string): Promise<boolean> {
  const row = host.state.index.get(host.projectId, path);
  if (row === undefined || (await host.engine.stat({ projectId: host.projectId, path })) !== null) return false;
  const { dir, name } = split(path);
  const parent = await openBeneath(host.dir, dir, { create: false });
  if (parent.kind !== 'dir') return false;
  try {
    const st = await lstatOrNull(parent.dir.entry(name));
    if (st === null) return true;
    if (!(st.isFile() || st.isSymbolicLink()) || !(await unchangedSinceIndexed(host.dir, path, row, st))) return false;
    await unlink(parent.dir.entry(name)).catch((error: NodeJS.ErrnoException) => {
      if (error.code !== 'ENOENT') throw error;
    });
    host.state.index.remove(host.projectId, path);
    return true;
  } finally {
    await parent.dir.close();
  }
}

/**
 * The directory at `path` (`abs`, reached without links) stands where the project now has a file:
 * it is removed if everything below it is content history has — each file's index row matches it
 * and the project has no file at its path (it was kept below a conflict copy's name,
 * capture/pipeline.ts) — and then holds nothing but directories; true when it was. Otherwise
 * nothing is removed. Seed 5000 of the sync model: `rm b; mkdir b; echo x > b/a` while `b` changed
 * elsewhere left the directory in the way of the project's `b` for good.
 */
export async function removeVersionedTreeInTheWay(host: HostContext, path: string, abs: string | Buffer): Promise<boolean> {
  const files: Array<{ abs: string | Buffer; rel: string }> = [];
  const queue: Array<{ abs: string | Buffer; rel: string }> = [{ abs, rel: path }];
  for (let walked = 0; queue.length > 0; walked++) {
    if (walked >= MAX_WALK) return false;
    const dir = queue.shift()!;
    for (const child of (await listOrGone(dir.abs)) ?? []) {
      const recorded = encodeName(child);
      if (recorded === null) return false;
      const entry = { abs: under(dir.abs, child), rel: `${dir.rel}/${recorded}` };
      const st = await lstatOrNull(entry.abs);
      if (st === null) continue;
      if (st.isDirectory()) {
        queue.push(entry);
        continue;
      }
      const row = host.state.index.get(host.projectId, entry.rel);
      if (row === undefined || !(st.isFile() || st.isSymbolicLink()) || !(await unchangedSinceIndexed(host.dir, entry.rel, row, st))) return false;
      if ((await host.engine.stat({ projectId: host.projectId, path: entry.rel })) !== null) return false;
      files.push(entry);
    }
  }
  for (const file of files) {
    await unlink(file.abs).catch((error: NodeJS.ErrnoException) => {
      if (error.code !== 'ENOENT') throw error;
    });
    host.state.index.remove(host.projectId, file.rel);
  }
  return removeEmptyTree(abs);
}
