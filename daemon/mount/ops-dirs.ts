// mkdir, rmdir and directory renames. The engine knows only files; directories the mount must show
// although no file is below them (`mkdir build`, or the last file removed) are kept in the daemon
// state (explicit dirs). A directory rename moves every file below it, each recorded as one rename.
import { E, fail } from './errno.js';
import type { Creator } from './fuse-binding.js';
import { keepParent, moveNode, placeNode, removeVersioned } from './moves.js';
import type { MountState, Resolved } from './mount-state.js';
import { isMissing } from './backing.js';
import { isWithin, joinPath, parentOf } from './paths.js';

export async function mkdir(state: MountState, path: string, mode: number, creator?: Creator): Promise<void> {
  if ((await state.resolve(path)) !== null) fail(E.EXIST);
  if (isWithin(path, '.strata')) fail(E.ACCES);
  const parent = await state.resolve(parentOf(path));
  if (parent === null) fail(E.NOENT);
  if (parent.kind !== 'dir') fail(E.NOTDIR);
  if (!parent.versioned || state.backingCandidate(path, true)) {
    await state.backing.mkdir(path, mode & ~(creator?.umask ?? 0));
    await state.backing.giveTo(path, creator === undefined ? undefined : { uid: creator.uid, gid: state.attrs.groupFor(path, creator) });
    state.backingDirs.add(path);
    state.noteIfUnversionable(path, parent.versioned);
    return;
  }
  const { ns } = state;
  // A file removed here whose deletion waits out its settle delay (`rm F; mkdir F`): recorded now,
  // before a directory takes the name. Left waiting, its marker was replaced by the directory's at
  // `rmdir F`, and the deletion was never recorded: the file stayed current in history, in later
  // snapshots, and came back with a restore (issue 39 item 9).
  const removed = ns.gone.get(path);
  if (removed !== undefined && !removed.dir && removed.movedTo === null) await state.reconciler.now(path, true).catch(() => undefined);
  ns.addExplicitDir(path);
  ns.setEntry(path, 'dir');
  ns.markNewDir(path);
  state.attrs.created(path, 'dir', mode, creator);
}

async function isEmpty(state: MountState, path: string, versioned: boolean): Promise<boolean> {
  if (versioned && (await state.ns.listing(path)).size > 0) return false;
  return (await state.backing.readdir(path)).length === 0;
}

export async function rmdir(state: MountState, path: string): Promise<void> {
  const resolved = await state.resolve(path);
  if (resolved === null) fail(E.NOENT);
  if (resolved.kind === 'virtual-dir') fail(E.ACCES);
  if (resolved.kind !== 'dir') fail(E.NOTDIR);
  if (path === '') fail(E.BUSY);
  if (!(await isEmpty(state, path, resolved.versioned))) fail(E.NOTEMPTY);
  if (resolved.versioned) {
    await recordFileGone(state, path);
    hideVersionedDir(state, path);
  }
  try {
    await state.backing.rmdir(path);
  } catch (error) {
    if (!isMissing(error)) throw error;
  }
  state.backingDirs.delete(path);
  await keepParent(state, path);
}

/**
 * A file that stood at `path` before this directory (`rm F; mkdir F`, or `mv F G; mkdir F`) whose
 * removal or move is still waiting for its settle delay: recorded now, before the directory's own
 * marker takes the name. Replaced, the file stayed in the engine for good — every file later made
 * below `F` was refused ("'F' is a file") and retried for ever, or kept as a conflict copy, and the
 * mount never went idle (fsstress, four workers).
 */
async function recordFileGone(state: MountState, path: string): Promise<void> {
  const marker = state.ns.gone.get(path);
  if (marker === undefined || marker.dir) return;
  // A move is recorded by its new name's node (tombstone here + write there).
  const target = marker.movedTo !== null && !marker.movedTo.detached ? marker.movedTo.path : path;
  await state.reconciler.now(target, true).catch(() => undefined);
}

/** A directory's gone marker at `path`, keeping a file's marker there that is not recorded yet (GoneMarker.replaced). */
function setDirMarker(state: MountState, path: string): void {
  const previous = state.ns.gone.get(path);
  const replaced = previous === undefined ? undefined : previous.dir ? previous.replaced : previous;
  state.ns.gone.set(path, { kind: 'gone', movedTo: null, dir: true, ...(replaced === undefined ? {} : { replaced }) });
}

/** The directory leaves the tree now; files the engine still has below it are being removed or moved. */
function hideVersionedDir(state: MountState, path: string): void {
  const { ns } = state;
  state.attrs.remove(path, true);
  ns.removeExplicitDir(path);
  setDirMarker(state, path);
  ns.deleteEntry(path);
  ns.invalidate(path, true);
  ns.dropDirTimes(path);
  state.reconciler.schedule(path);
}

/** Every versioned file and directory below `dir` (loads listings as needed). */
async function collect(state: MountState, dir: string): Promise<{ files: string[]; dirs: string[] }> {
  const files: string[] = [];
  const dirs: string[] = [dir];
  for (let i = 0; i < dirs.length; i++) {
    for (const [name, kind] of await state.ns.listing(dirs[i]!)) {
      const path = joinPath(dirs[i]!, name);
      if (kind === 'dir') dirs.push(path);
      else files.push(path);
    }
  }
  return { files, dirs };
}

export async function renameDir(
  state: MountState,
  from: string,
  to: string,
  sourceVersioned: boolean,
  target: Resolved | null,
  toParentVersioned: boolean,
): Promise<void> {
  if (from === '' || isWithin(to, from)) fail(E.INVAL);
  if (target !== null) {
    if (target.kind !== 'dir') fail(E.NOTDIR);
    if (!(await isEmpty(state, to, target.versioned))) fail(E.NOTEMPTY);
    await rmdir(state, to);
  }
  const targetVersioned = toParentVersioned && !state.backingCandidate(to, true);
  if (!sourceVersioned && !targetVersioned) {
    await state.backing.rename(from, to);
    state.noteIfUnversionable(to, toParentVersioned);
    for (const dir of [...state.backingDirs]) if (isWithin(dir, from)) state.backingDirs.delete(dir);
    state.backingDirs.add(to);
    return;
  }
  // Moving a tree between versioned and ignored names: let the tool copy (mv does, on EXDEV).
  if (sourceVersioned !== targetVersioned) fail(E.XDEV);

  const { ns } = state;
  const { files, dirs } = await collect(state, from);
  for (const dir of dirs) await recordFileGone(state, dir);
  const moved = (path: string) => to + path.slice(from.length);
  // Read first: the changes below give each directory the time now.
  const dirTimes = dirs.map((dir) => [dir, ns.dirTimesOf(dir)] as const);
  for (const dir of dirs) ns.addExplicitDir(moved(dir));
  for (const path of files) {
    // Another name of a linked file moves as a tombstone and a version of its group's content (ops-links.ts).
    if (!state.links.empty && state.links.primaryOf(path) !== path) {
      await removeVersioned(state, path, null);
      ns.setEntry(moved(path), 'file');
      state.reconciler.schedule(moved(path));
      continue;
    }
    const resolved = await state.resolve(path);
    if (resolved === null || (resolved.kind !== 'node' && resolved.kind !== 'entry')) continue;
    const node = state.nodeFor(path, resolved);
    moveNode(state, node, path, moved(path));
    placeNode(state, node, moved(path), null);
  }
  state.attrs.move(from, to, true);
  state.links.move(from, to, true);
  for (const dir of dirs) {
    ns.removeExplicitDir(dir);
    setDirMarker(state, dir);
    state.reconciler.schedule(dir);
  }
  ns.deleteEntry(from);
  ns.invalidate(from, true);
  ns.setEntry(to, 'dir');
  for (const dir of dirs) ns.invalidate(moved(dir));
  for (const [dir, times] of dirTimes) ns.moveDirTimes(dir, moved(dir), times, dir === from);
  // Ignored content below the directory (src/__pycache__) moves along.
  try {
    await state.backing.rename(from, to);
  } catch (error) {
    if (!isMissing(error)) throw error;
  }
  await keepParent(state, from);
}
