// Reading and changing a node's bytes: memory for small files, a staging file past MEMORY_LIMIT,
// copy-on-write of the base content on the first change that keeps some of it.
import { type ContentReader, type ContentRef, contentForSmall, contentSpans, copyContentInto, openContent } from './content-reader.js';
import { type BaseRef, type FileNode, type Handle, MEMORY_LIMIT } from './file-node.js';
import type { MountState } from './mount-state.js';
import { openMapped } from './mapped-reads.js';
import { type BaseSpans, StagingFile } from './staging-file.js';

/** Makes the node's content changeable (memory or staged), copying the base bytes it must keep. */
async function makeWritable(state: MountState, node: FileNode, keep: number): Promise<void> {
  if (node.content.kind !== 'base') return;
  const base = node.base;
  const kept = base === null ? 0 : Math.min(base.size, keep);
  if (kept === 0) {
    node.content = { kind: 'memory', buf: Buffer.alloc(0) };
    return;
  }
  const source = { hash: base!.hash, size: base!.size, versionId: base!.versionId, dataset: base!.dataset };
  if (base!.size <= MEMORY_LIMIT) {
    const data = await contentForSmall(state.source, source);
    node.content = { kind: 'memory', buf: Buffer.from(data) };
    return;
  }
  const file = StagingFile.create(state.pool);
  // The base's bytes are copied in the background, so a write into (or an append to) a large file
  // costs what was written, not the file's size, nor even the lookup of where those bytes lie.
  file.fillBehind(base!, kept, () => baseSpans(state, source));
  node.content = { kind: 'staged', file };
  await journalOpen(state, node, file);
}

/**
 * Where the base's bytes lie as plain local files (a loose object, a dataset's shards in the pack
 * files). When some part is not one (a packed small object, a store that is not local), the base is
 * first copied whole into a temporary staging file, which the fill then reads.
 * STRATA_MOUNT_NO_SPANS=1 takes that way for every base: how the tests reach it.
 */
async function baseSpans(state: MountState, base: ContentRef): Promise<BaseSpans> {
  const spans = process.env['STRATA_MOUNT_NO_SPANS'] === '1' ? null : await contentSpans(state.source.store, base.hash, base.dataset === true);
  if (spans !== null) return { spans };
  const copy = StagingFile.create(state.pool);
  try {
    await copyContentInto(state.source, base, copy);
    await copy.drain();
  } catch (error) {
    await copy.discard();
    throw error;
  }
  return { spans: [{ file: copy.path, offset: 0, size: copy.size }], release: () => copy.discard() };
}

/**
 * A staging file names its path from the start (not only at close): if the mount dies while a tool
 * is still writing it (a 200 MB `dd` in progress), the next start keeps those bytes as a recovered
 * version instead of nothing (recovery.ts). Not durable: a kill -9 keeps the page cache.
 */
async function journalOpen(state: MountState, node: FileNode, file: StagingFile): Promise<void> {
  await file.journal({ projectId: state.projectId, path: node.path, executable: node.executable, open: true }, false).catch((error: unknown) => {
    state.logger.warn({ path: node.path, err: (error as Error).message }, 'mount: could not journal a staging file');
  });
}

/** Memory content that outgrew MEMORY_LIMIT moves to a staging file. */
async function spill(state: MountState, node: FileNode): Promise<void> {
  if (node.content.kind !== 'memory') return;
  const { buf } = node.content;
  const file = StagingFile.create(state.pool);
  try {
    if (node.size > 0) await file.write(0, buf, node.size);
  } catch (error) {
    await file.discard();
    throw error;
  }
  node.content = { kind: 'staged', file };
  await journalOpen(state, node, file);
}

function growMemory(buf: Buffer, size: number): Buffer {
  if (buf.length >= size) return buf;
  const grown = Buffer.alloc(Math.min(MEMORY_LIMIT, Math.max(size, buf.length * 2, 4096)));
  buf.copy(grown, 0, 0, buf.length);
  return grown;
}

export async function writeNode(state: MountState, node: FileNode, data: Buffer, len: number, pos: number): Promise<void> {
  await node.settled();
  if (node.content.kind === 'base') await node.exclusive(() => makeWritable(state, node, Number.POSITIVE_INFINITY));
  if (node.content.kind === 'memory' && pos + len > MEMORY_LIMIT) await node.exclusive(() => spill(state, node));
  const content = node.content;
  if (content.kind === 'memory') {
    const buf = growMemory(content.buf, pos + len);
    // A write past the end leaves a hole of zeros (Buffer.alloc above; and bytes beyond the old size
    // are zero because truncate clears them).
    data.copy(buf, pos, 0, len);
    content.buf = buf;
  } else if (content.kind === 'staged') {
    await content.file.write(pos, data, len);
  }
  if (pos + len > node.size) node.size = pos + len;
  node.dirty = true;
  node.touch(state.now());
}

/**
 * writeNode's common case done synchronously (content already in memory or staged, nothing running
 * on the node): the bytes are copied before this returns; the promise waits for room in the staging
 * file's queue. Null when that is not the case (ops-io.ts writeNow).
 */
export function writeNodeNow(state: MountState, node: FileNode, data: Buffer, len: number, pos: number): Promise<void> | null {
  if (node.busy !== null) return null;
  const content = node.content;
  let room: Promise<void>;
  if (content.kind === 'memory' && pos + len <= MEMORY_LIMIT) {
    const buf = growMemory(content.buf, pos + len);
    data.copy(buf, pos, 0, len);
    content.buf = buf;
    room = Promise.resolve();
  } else if (content.kind === 'staged' && content.file.writable) {
    room = content.file.put(pos, data, len);
  } else {
    return null;
  }
  if (pos + len > node.size) node.size = pos + len;
  node.dirty = true;
  node.touch(state.now());
  return room;
}

export async function truncateNode(state: MountState, node: FileNode, size: number): Promise<void> {
  await node.exclusive(async () => {
    if (size === 0) {
      if (node.content.kind === 'staged') await node.content.file.discard();
      node.content = { kind: 'memory', buf: Buffer.alloc(0) };
    } else {
      await makeWritable(state, node, size);
      if (node.content.kind === 'memory' && size > MEMORY_LIMIT) await spill(state, node);
      const content = node.content;
      if (content.kind === 'memory') {
        const buf = growMemory(content.buf, size);
        buf.fill(0, size); // bytes past the new end read as zeros if the file grows again
        content.buf = buf;
      } else if (content.kind === 'staged') {
        await content.file.truncate(size);
      }
    }
    if (node.size !== size || size === 0) node.dirty = true;
    node.size = size;
    node.touch(state.now());
  });
}

export async function readNode(state: MountState, handle: Handle, node: FileNode, into: Buffer, len: number, pos: number): Promise<number> {
  await node.settled();
  if (pos >= node.size) return 0;
  const want = Math.min(len, node.size - pos);
  const content = node.content;
  if (content.kind === 'memory') return content.buf.copy(into, 0, pos, pos + want);
  if (content.kind === 'staged') return content.file.read(pos, want, into);
  const base = node.base;
  if (base === null) return 0;
  const reader = await baseReader(state, handle, node, base);
  return reader.read(into, want, pos);
}

/** The handle's reader of `base`, opened at its first read (or when its node leaves the tree: holdBase). */
function baseReader(state: MountState, handle: Handle, node: FileNode, base: BaseRef): Promise<ContentReader> {
  if (handle.reader === null || handle.readerHash !== base.hash) {
    // A restore changed the base under this handle: the old reader goes (a read still in flight on
    // it may fail; the next one reads the new content).
    if (handle.reader !== null) void state.closeReader(handle);
    const opening = openMapped(state, handle, node, base).then(
      (mapped) => mapped ?? openContent(state.source, { hash: base.hash, size: base.size, versionId: base.versionId, dataset: base.dataset }),
    );
    handle.reader = opening;
    handle.readerHash = base.hash;
    // A failed open is not cached: the next read tries again.
    opening.catch(() => {
      if (handle.reader === opening) {
        handle.reader = null;
        handle.readerHash = null;
      }
    });
  }
  return handle.reader;
}

/**
 * The node left the tree (replaced, removed, restored over) while open: its base is no longer the
 * path's current version, so retention may prune it and delete its object at once (when older than
 * the GC grace period). Handles that have not read yet open it now — an open descriptor (a loose
 * object, shards) or the bytes (a packed one) keep it readable, as a filesystem keeps an unlinked
 * file's bytes for its open descriptors.
 */
export function holdBase(state: MountState, node: FileNode): void {
  const base = node.base;
  if (base === null || base.size === 0 || node.content.kind !== 'base') return;
  for (const handle of state.handles.values()) {
    if (handle.node !== node || handle.reader !== null) continue;
    // A failure here is the first read's to report (it tries again).
    baseReader(state, handle, node, base).catch(() => undefined);
  }
}

