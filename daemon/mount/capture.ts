// One capture: the node's current bytes become the path's new version (or nothing, when they equal
// the current entry's — the engine checks that with `ifChanged`).
import { access } from 'node:fs/promises';
import type { ContentHash } from '../../engine/types.js';
import { type BaseRef, baseOf, type FileNode } from './file-node.js';
import type { MountState } from './mount-state.js';
import { recordedWhileRemoved } from './moves.js';
import type { SinkContent, SinkResult } from './sink.js';
import { StagingFile } from './staging-file.js';

/**
 * `at`: where the bytes go instead of the node's path (a conflict copy: reconciler.ts); the node then
 * has its content there, at a name the mount does not show it under, and the caller detaches it.
 */
export async function captureNode(state: MountState, node: FileNode, at?: string): Promise<SinkResult | null> {
  return node.exclusive(async () => {
    if (node.detached) return null;
    const generation = node.generation;
    const path = at ?? node.path;
    const content = node.content;
    let payload: SinkContent;
    let adopted: { file: StagingFile; hash: ContentHash; size: number } | null = null;
    let allocated: number | null = null;
    if (content.kind === 'memory') {
      // A copy (writes may continue meanwhile) that owns its memory, so it can move to the capture thread.
      const copy = new Uint8Array(node.size);
      copy.set(content.buf.subarray(0, node.size));
      payload = copy;
    } else if (content.kind === 'staged') {
      if (node.writers > 0) {
        // Forced while still open for writing (fsync, unmount): the file stays ours, the store copies it.
        await content.file.complete();
        payload = { file: content.file.path, adopt: false, size: node.size };
      } else {
        // Hash already computed by the staging worker as the bytes went by; the store renames the file in.
        const finishing = state.now();
        const { hash, size } = await content.file.finish();
        state.logger.debug({ path, size, ms: state.now() - finishing }, 'mount: staging file finished');
        // Written with holes (`dd seek=`, a preallocated database)? Its blocks, before the store takes the file.
        allocated = await content.file.allocated();
        // A write that failed (ENOSPC, reported to the tool) left the file shorter than the size the
        // kernel was told: what it holds is its content, and its size.
        node.size = size;
        // Before the store takes the file in (a rename): once it is gone from staging, only this
        // record lets a restart after a crash here find the content and version it.
        await content.file.journal({ projectId: state.projectId, path, executable: node.executable, hash }, true);
        adopted = { file: content.file, hash, size };
        payload = { file: content.file.path, knownHash: hash, adopt: true, size };
      }
    } else {
      payload = await baseContent(state, node.base);
    }

    let result: SinkResult;
    const started = state.now();
    try {
      result = await state.sink.write(path, payload, node.executable, node.symlink);
      state.logger.debug({ path, size: node.size, ms: state.now() - started, adopted: adopted !== null }, 'mount: captured');
    } catch (error) {
      if (adopted !== null) await recoverStaging(state, node, adopted.file, adopted.hash, adopted.size);
      throw error;
    }
    if (adopted !== null) {
      node.content = { kind: 'base' };
      await adopted.file.unjournal();
    }
    const { entry } = result;
    recordedWhileRemoved(state, node, path, entry.versionId);
    // Noted under the version's content hash (a dataset's is its manifest's): every version and restore of these bytes shows them.
    if (allocated !== null && entry.contentHash !== null) state.sparse.note(entry.contentHash, entry.size, allocated);
    node.base = baseOf(entry);
    node.enginePath = path;
    // Its bytes are the path's newest version now, over whatever change had superseded it.
    node.superseded = false;
    if (node.generation === generation) {
      node.dirty = false;
      if (node.content.kind === 'memory') node.content = { kind: 'base' };
    }
    return result;
  });
}

/** Unchanged bytes under a new name or exec bit (or a hard link's other name): the stored object itself is the content. */
export async function baseContent(state: MountState, base: BaseRef | null): Promise<SinkContent> {
  if (base === null || base.size === 0) return new Uint8Array(0);
  const store = state.source.store;
  // A dataset's object is its manifest; its bytes come assembled from the engine (below).
  if (store !== null && !base.dataset) {
    const file = store.objectFile === undefined ? null : await store.objectFile(base.hash);
    if (file !== null) return { file, adopt: false };
    return store.readBuffer(base.hash);
  }
  const { stream } = await state.engine.readFile({ projectId: state.projectId, versionId: base.versionId });
  return stream;
}

/** The capture failed after the staging file was finished: keep serving the bytes, retry later. */
async function recoverStaging(state: MountState, node: FileNode, file: StagingFile, hash: ContentHash, size: number): Promise<void> {
  try {
    await access(file.path);
  } catch {
    // The store took the file before the failure (its commit failed after the object was stored):
    // the bytes are an object now, not yet referenced. Serve them from there; the node stays dirty, so
    // the retry versions them from the store (the grace period keeps GC away meanwhile).
    node.base = { versionId: '', hash, size, executable: node.executable, dataset: false, symlink: false };
    node.enginePath = null;
    node.content = { kind: 'base' };
    return;
  }
  node.content = { kind: 'staged', file: await StagingFile.adoptExisting(state.pool, file.path) };
}
