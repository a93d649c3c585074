// link(2), and what unlink and rename do to a name of a hard-linked file (link-groups.ts). A versioned
// file's names share its primary name's node, modes and times; FIFOs, sockets, device nodes and
// ignored files live in the backing directory, whose own hard links do the same for them.
import { E, fail } from './errno.js';
import { msTime } from './file-time.js';
import { type MountState, VIRTUAL_DIR } from './mount-state.js';
import { removeVersioned } from './moves.js';
import { isWithin, parentOf } from './paths.js';

/** A new name `to` for the file at `from`: the kernel's link(2) checks (permissions, EXDEV across mounts) come first. */
export async function link(state: MountState, from: string, to: string): Promise<void> {
  const source = await state.resolve(from);
  if (source === null) fail(E.NOENT);
  if (source.kind === 'dir' || source.kind === 'virtual-dir') fail(E.PERM);
  if ((await state.resolve(to)) !== null) fail(E.EXIST);
  if (source.kind === 'virtual-file' || isWithin(to, VIRTUAL_DIR)) fail(E.ACCES);
  const parent = await state.resolve(parentOf(to));
  if (parent === null) fail(E.NOENT);
  if (parent.kind !== 'dir') fail(E.NOTDIR);
  const versionedName = parent.versioned && !state.backingCandidate(to, false);
  if (source.kind === 'backing-file') {
    const special = !source.stat.isFile() && !source.stat.isSymbolicLink();
    // A versioned name holds a special file only as a marker row; a plain file there would be versioned.
    if (versionedName && !special) fail(E.XDEV);
    await state.backing.link(from, to);
    if (versionedName) state.attrs.markSpecial(to, Number(source.stat.mode));
    state.ns.touchDir(parentOf(to));
    return;
  }
  // One file cannot be both versioned and a plain file of the backing directory: `ln` says so, `cp -l` copies.
  if (!versionedName) fail(E.XDEV);
  const primary = state.links.primaryOf(from);
  state.links.add(primary, to);
  const marker = state.ns.gone.get(to);
  if (marker !== undefined && !marker.dir) state.ns.gone.delete(to);
  state.ns.setEntry(to, 'file');
  await touchFile(state, primary);
  // The new name's first version (the file's current content) is recorded after the settle delay.
  state.reconciler.schedule(to);
}

/**
 * `path` stops being a name of its file (it is unlinked, or a rename replaces it); the file lives on
 * under its other names, and its ctime moves. When `path` was the primary, the file's local state (the
 * node, its modes, its times) moves to the next name. Returns false when `path` had no other name.
 */
export async function leaveGroup(state: MountState, path: string): Promise<boolean> {
  const { links, ns } = state;
  if (!links.has(path)) return false;
  const wasPrimary = links.primaryOf(path) === path;
  const resolved = wasPrimary ? await state.resolve(path) : null;
  const node = resolved?.kind === 'node' || resolved?.kind === 'entry' ? state.nodeFor(path, resolved) : undefined;
  const primary = links.remove(path);
  if (primary === null) return false;
  if (wasPrimary) {
    state.attrs.move(path, primary);
    if (node !== undefined && ns.nodes.get(path) === node) {
      ns.nodes.delete(path);
      state.dropOrigin(node);
      node.path = primary;
      // The next capture writes the content at its new name only if that name's version differs (a
      // link made within the settle delay has none yet); it then records the name's times.
      node.enginePath = null;
      ns.nodes.set(primary, node);
      state.reconciler.schedule(primary);
      // A closed file waiting for its capture: its journal record follows it (placeNode does the same).
      if (node.writers === 0) void state.logNode(node).catch(() => {});
    }
  }
  await touchFile(state, primary);
  return true;
}

/** unlink of a name of a multiply linked file: a tombstone for that name only. */
export async function unlinkName(state: MountState, path: string): Promise<boolean> {
  if (!(await leaveGroup(state, path))) return false;
  await removeVersioned(state, path, null);
  return true;
}

/**
 * rename of a name that is not its file's primary: the old name gets a tombstone and the new one a
 * version with the file's content (the engine's rename record needs a file of its own to move).
 * Returns false when `from` is the primary or not linked: an ordinary rename then, the group follows.
 */
export async function renameSecondary(state: MountState, from: string, to: string): Promise<boolean> {
  const primary = state.links.primaryOf(from);
  if (primary === from) return false;
  await unlinkName(state, from);
  await link(state, primary, to);
  return true;
}

/**
 * After a resync (more changed than the change feed reads): which names changed is not known, so a
 * name leaves its hard-link group only when its current version is not the group's content (a
 * restore or a pulled change of that name); the others stay one file.
 */
export async function splitDiverged(state: MountState): Promise<void> {
  const stat = (path: string) => state.engine.stat({ projectId: state.projectId, path });
  for (const name of [...state.links.paths()]) {
    if (!state.links.has(name)) continue;
    const primary = state.links.primaryOf(name);
    if (primary === name) continue;
    const [mine, group] = await Promise.all([stat(name), stat(primary)]);
    if (mine !== null && group !== null && mine.contentHash !== group.contentHash) state.splitOff(name);
  }
}

/** A file's ctime moves (a name was added or removed). */
async function touchFile(state: MountState, path: string): Promise<void> {
  const resolved = await state.resolve(path);
  if (resolved?.kind === 'node') resolved.node.ctime = msTime(state.now());
  else if (resolved?.kind === 'entry') state.touchEntry(path, resolved.entry);
}
