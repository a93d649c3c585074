// Moving versioned files in the tree: removals and renames as local state the reconciler turns
// into engine records (tombstones, renames) after the settle delay.
import type { FileNode, GoneMarker } from './file-node.js';
import { msTime } from './file-time.js';
import type { MountState, Resolved } from './mount-state.js';
import { isFuseHidden, parentOf } from './paths.js';

/**
 * The versioned file at `path` leaves the tree; the engine records it after the settle delay. `shown`:
 * the version the name showed (the node's own base, else the caller's entry).
 */
export async function removeVersioned(state: MountState, path: string, node: FileNode | null, shown?: string): Promise<void> {
  const { ns } = state;
  state.attrs.remove(path);
  if (node !== null) {
    const hidden = node.detached || isFuseHidden(path);
    state.detach(node);
    // libfuse's `.fuse_hiddenXXXX` names never reached the engine: nothing to record.
    if (hidden) {
      ns.deleteEntry(path);
      return;
    }
  }
  // A node's base of '' is content it computed itself (capture.ts), no version: nothing to compare.
  // Nor is a base at another name (a rename or a hard link's name not recorded yet): it is not the
  // version this name showed, and the removal gave way to the name's own, older version — `mv src
  // dst; rm dst lnk` with `lnk` a second name of the old `dst` brought both back (pjdfstest rename/23).
  const base = node === null ? shown : node.enginePath === path ? node.base?.versionId || undefined : undefined;
  const marker: GoneMarker = { kind: 'gone', movedTo: null, dir: false, ...(base === undefined ? {} : { shown: base }) };
  ns.gone.set(path, marker);
  ns.deleteEntry(path);
  state.reconciler.schedule(path);
  state.journal.append({ op: 'd', path });
  await keepParent(state, path);
}

/**
 * `node`'s content was recorded at `path` as `versionId` by a capture that was under way when the file
 * was removed: the removal's marker names the version before it, and would give way to this one as to
 * a change made elsewhere — the file came back in the engine, never on the mount, and history and the
 * tree disagreed for good (fsstress, four workers). What the user removed is what was just recorded.
 */
export function recordedWhileRemoved(state: MountState, node: FileNode, path: string, versionId: string): void {
  const marker = state.ns.gone.get(path);
  if (node.detached && marker !== undefined && marker.movedTo === null && !marker.dir && marker.shown !== undefined) marker.shown = versionId;
}

/** Removing a directory's last file must not remove the directory (the engine only knows files). */
export async function keepParent(state: MountState, path: string): Promise<void> {
  const parent = parentOf(path);
  if (parent === '' || state.ns.explicitDirs.has(parent)) return;
  if ((await state.ns.listing(parent)).size === 0) state.ns.addExplicitDir(parent);
}

/** Leaves a gone marker at `from` that remembers where the node went. */
export function moveNode(state: MountState, node: FileNode, from: string, to: string): void {
  const { ns } = state;
  state.journal.append({ op: 'r', from, to });
  const marker: GoneMarker = { kind: 'gone', movedTo: node, dir: false };
  if (ns.nodes.get(from) === node) ns.nodes.delete(from);
  ns.gone.set(from, marker);
  ns.deleteEntry(from);
  // The first move away from the engine's name records the rename; later moves keep that origin.
  if (node.enginePath === from) node.originMarker = marker;
  state.reconciler.schedule(from);
}

/** Puts the node at `to`, replacing whatever was there (open handles keep the replaced file). */
export function placeNode(state: MountState, node: FileNode, to: string, target: Resolved | null): void {
  const { ns } = state;
  if (target?.kind === 'node' && target.node !== node) state.detach(target.node);
  if (target?.kind === 'backing-file') void state.backing.unlink(to).catch(() => {});
  const marker = ns.gone.get(to);
  if (marker !== undefined && !marker.dir) ns.gone.delete(to);
  node.path = to;
  node.ctime = msTime(state.now());
  ns.nodes.set(to, node);
  ns.setEntry(to, 'file');
  state.reconciler.schedule(to);
  // A closed file moved before its capture: its journal follows it.
  if (node.writers === 0) void state.logNode(node).catch(() => {});
}

/** libfuse hides a file unlinked while open: for us that is an unlink, and the node lives on unseen. */
export function hideNode(state: MountState, node: FileNode, from: string, to: string): void {
  const { ns } = state;
  state.attrs.move(from, to);
  const marker: GoneMarker = { kind: 'gone', movedTo: null, dir: false };
  if (ns.nodes.get(from) === node) ns.nodes.delete(from);
  ns.gone.set(from, marker);
  ns.deleteEntry(from);
  state.reconciler.schedule(from);
  state.detach(node);
  node.path = to;
  ns.nodes.set(to, node);
  ns.setEntry(to, 'file');
}

export async function removeTarget(state: MountState, to: string, target: Resolved): Promise<void> {
  if (target.kind === 'backing-file') await state.backing.unlink(to);
  else if (target.kind === 'node') await removeVersioned(state, to, target.node);
  else if (target.kind === 'entry') await removeVersioned(state, to, null, target.entry.versionId);
}
