// Reads of stored content without JS (native/fuse src/read_maps.c). The first read of a handle on a
// large file's unchanged content comes here as before; when that content lies in plain local files (a
// loose object, or a dataset's shards in the store's pack files) its spans also go to native/fuse,
// which answers the handle's later reads itself, on libuv's thread pool. A change to the node's
// content or base (a write through another handle, a capture, a restore) unmaps it (file-node.ts), so
// reads never return stale bytes that JS would not.
import { contentSpans, type ContentReader, openSpans } from './content-reader.js';
import { type BaseRef, type FileNode, type Handle, MEMORY_LIMIT } from './file-node.js';
import type { MountState } from './mount-state.js';

/** native/fuse's table of mapped handles (fuse-binding.ts FuseMount.contentMaps). */
export interface ContentMaps {
  /** `table`: [descriptor, offset, size] per span, in content order; 0 or -errno. */
  map(fh: number, table: Float64Array, size: number): number;
  unmap(fh: number): void;
}

/**
 * A reader of `base` for `handle`, mapped in native/fuse as well; null when the content does not lie
 * in local files (the caller opens an ordinary reader then).
 */
export async function openMapped(state: MountState, handle: Handle, node: FileNode, base: BaseRef): Promise<ContentReader | null> {
  if (state.contentMaps === null || base.size <= MEMORY_LIMIT || base.symlink) return null;
  const spans = await contentSpans(state.source.store, base.hash, base.dataset);
  if (spans === null) return null;
  const reader = await openSpans(spans);
  const maps = state.contentMaps;
  // Only while it is still this content, for a handle still open: the awaits let anything happen.
  if (maps === null || node.content.kind !== 'base' || node.base !== base || state.handles.get(handle.id) !== handle) return reader;
  if (maps.map(handle.id, reader.table(), base.size) === 0) {
    node.mappedReads ??= { handles: new Set(), unmap: (fh) => maps.unmap(fh) };
    node.mappedReads.handles.add(handle.id);
  }
  return reader;
}

/** The handle goes: native/fuse forgets it. */
export function unmapHandle(node: FileNode, handle: Handle): void {
  const mapped = node.mappedReads;
  if (mapped?.handles.delete(handle.id)) mapped.unmap(handle.id);
}
