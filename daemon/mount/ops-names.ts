// unlink and rename. A removal is recorded (as a tombstone) after the settle delay, and dropped if the
// path holds a new file by then; a rename of a versioned file is recorded as one engine rename from
// its original name, so `to`'s history links back to where the content came from.
import { materializeToBacking, nodeFromBacking } from './cross-domain.js';
import { E, fail } from './errno.js';
import { hideNode, moveNode, placeNode, removeTarget, removeVersioned } from './moves.js';
import { type MountState, type Resolved, VIRTUAL_DIR } from './mount-state.js';
import { renameDir } from './ops-dirs.js';
import { leaveGroup, renameSecondary, unlinkName } from './ops-links.js';
import { isFuseHidden, isWithin, parentOf } from './paths.js';

export async function unlink(state: MountState, path: string): Promise<void> {
  const resolved = await state.resolve(path);
  if (resolved === null) fail(E.NOENT);
  switch (resolved.kind) {
    case 'dir':
    case 'virtual-dir':
      fail(E.ISDIR);
      break;
    case 'virtual-file':
      fail(E.ACCES);
      break;
    case 'backing-file':
      await state.backing.unlink(path);
      state.attrs.remove(path);
      if (state.attrs.isSpecial(path) || !resolved.stat.isFile()) state.ns.touchDir(parentOf(path));
      return;
    case 'node':
    case 'entry': {
      // The mass-delete guard: once tripped, tracked files stay (EPERM) until `strata guard reset`.
      // A file never versioned (a tool's scratch file, still in its settle delay) is not counted and
      // not refused, as in watch mode: tools that create and delete temp files keep working.
      const tracked = resolved.kind === 'entry' || resolved.node.enginePath !== null;
      if (tracked && !(await state.admitDelete(path))) fail(E.PERM);
      // One name of a multiply linked file: the file stays under its others.
      if (await unlinkName(state, path)) return;
      await removeTarget(state, path, resolved);
    }
  }
}

export async function rename(state: MountState, from: string, to: string): Promise<void> {
  if (isWithin(from, VIRTUAL_DIR) || isWithin(to, VIRTUAL_DIR)) fail(E.ACCES);
  if (from === to) return;
  const source = await state.resolve(from);
  if (source === null) fail(E.NOENT);
  const target = await state.resolve(to);
  const toParent = await state.resolve(parentOf(to));
  if (toParent === null) fail(E.NOENT);
  if (toParent.kind !== 'dir') fail(E.NOTDIR);
  if (source.kind === 'dir') return renameDir(state, from, to, source.versioned, target, toParent.versioned);
  if (target !== null && (target.kind === 'dir' || target.kind === 'virtual-dir')) fail(E.ISDIR);
  if (!state.links.empty && (state.links.has(from) || state.links.has(to))) return renameLinked(state, from, to);
  return renameFile(state, from, to, source, target, toParent.versioned);
}

/** A file (not a directory) moves from `from` to `to`, replacing `target`. */
async function renameFile(state: MountState, from: string, to: string, source: Resolved, target: Resolved | null, toParentVersioned: boolean): Promise<void> {
  const sourceVersioned = source.kind === 'node' || source.kind === 'entry';
  const targetVersioned =
    target !== null && (target.kind === 'node' || target.kind === 'entry')
      ? true
      : toParentVersioned && !state.backingCandidate(to, false);
  if (source.kind === 'backing-file' && !source.stat.isFile() && !(source.stat.isSymbolicLink() && targetVersioned)) return renameSpecial(state, from, to, Number(source.stat.mode), target, targetVersioned);
  if (!sourceVersioned) {
    if (!targetVersioned) {
      if (target !== null && target.kind !== 'backing-file') await removeTarget(state, to, target);
      await state.backing.rename(from, to);
      state.noteIfUnversionable(to, toParentVersioned);
      return;
    }
    const node = await nodeFromBacking(state, from, to);
    state.attrs.remove(to);
    return placeNode(state, node, to, target);
  }
  const node = state.nodeFor(from, source as Extract<Resolved, { kind: 'node' | 'entry' }>);
  if (isFuseHidden(to)) return hideNode(state, node, from, to);
  if (!targetVersioned) {
    // Renamed over whatever ignored file was at `to` (materializeToBacking): nothing to remove after.
    await materializeToBacking(state, node, to);
    state.noteIfUnversionable(to, toParentVersioned);
    return removeVersioned(state, from, node);
  }
  moveNode(state, node, from, to);
  placeNode(state, node, to, target);
  state.attrs.move(from, to);
}


/**
 * A rename from or onto a name of a multiply linked file. The replaced name leaves its group first (its
 * file lives on under its other names); a primary then moves as any file does, its group following
 * (the engine records the rename); another name moves as a tombstone here and a version there.
 */
async function renameLinked(state: MountState, from: string, to: string): Promise<void> {
  const { links } = state;
  // Two names of one file: nothing to do (POSIX; the kernel checks this itself for the inodes it knows).
  if (links.has(to) && links.groupId(from) === links.groupId(to)) return;
  const toParent = await state.resolve(parentOf(to));
  // Between versioned and ignored names a linked file would stop being one file: mv copies on EXDEV.
  if (links.has(from) && (toParent?.kind !== 'dir' || !toParent.versioned || state.backingCandidate(to, false) || isFuseHidden(to))) fail(E.XDEV);
  await leaveGroup(state, to);
  const target = await state.resolve(to);
  if (links.has(from) && links.primaryOf(from) !== from) {
    if (target !== null) await removeTarget(state, to, target);
    await renameSecondary(state, from, to);
    return;
  }
  const source = await state.resolve(from);
  if (source === null || toParent === null) fail(E.NOENT);
  await renameFile(state, from, to, source, target, toParent.kind === 'dir' && toParent.versioned);
  links.move(from, to);
}

/** A FIFO, socket or device node (or a link among ignored files) stays what it is: never read as content. */
async function renameSpecial(state: MountState, from: string, to: string, mode: number, target: Resolved | null, toVersionable: boolean): Promise<void> {
  if (target !== null) await removeTarget(state, to, target);
  await state.backing.rename(from, to);
  state.attrs.remove(from);
  if (toVersionable) state.attrs.markSpecial(to, mode);
  else state.attrs.remove(to);
  state.ns.touchDir(parentOf(from));
  state.ns.touchDir(parentOf(to));
}
