// Renames between the versioned tree and the backing directory (ignored names): vim's
// `rename(file, file~)` before writing a new `file`, or `mv notes.swp notes.txt`. Bytes move by rename
// where they can: the backing directory is in the home, staging too unless the home is on a network
// filesystem (then staging is on local disk, staging-dir.ts, and the move is a copy).
import { chmod, copyFile, readlink, rename, rm, symlink, writeFile } from 'node:fs/promises';
import { pipeline } from 'node:stream/promises';
import { createWriteStream } from 'node:fs';
import { contentForSmall } from './content-reader.js';
import { FileNode } from './file-node.js';
import { nsTime } from './file-time.js';
import type { MountState } from './mount-state.js';
import { StagingFile } from './staging-file.js';

/**
 * Writes the node's current bytes to the backing path `to` (a copy: the node may still be open). Built
 * under a temp name and renamed over `to`, so what was there (an ignored file of that name: Emacs'
 * `file~` on its second save) is replaced in one step. It was removed after the copy was written to
 * its very name, and `mv f f~` lost both files (issue 39 item 1); a link met EEXIST.
 */
export async function materializeToBacking(state: MountState, node: FileNode, to: string): Promise<void> {
  await node.settled();
  const temp = await state.backing.tempPath();
  try {
    await writeNodeTo(state, node, temp);
    await state.backing.replaceWith(temp, to);
  } catch (error) {
    await rm(temp, { force: true });
    throw error;
  }
}

async function writeNodeTo(state: MountState, node: FileNode, dest: string): Promise<void> {
  const content = node.content;
  if (node.symlink) {
    const target = content.kind === 'memory' ? content.buf.subarray(0, node.size) : node.base === null ? Buffer.alloc(0) : await contentForSmall(state.source, node.base);
    await symlink(target.toString(), dest);
    return;
  }
  if (content.kind === 'memory') {
    await writeFile(dest, content.buf.subarray(0, node.size));
  } else if (content.kind === 'staged') {
    await content.file.complete();
    await copyFile(content.file.path, dest);
  } else if (node.base === null || node.base.size === 0) {
    await writeFile(dest, Buffer.alloc(0));
  } else {
    const { store } = state.source;
    // A dataset's object is its manifest: its bytes come assembled from the engine.
    const object = store?.objectFile === undefined || node.base.dataset ? null : await store.objectFile(node.base.hash);
    if (object !== null) await copyFile(object, dest);
    else if (store !== null && !node.base.dataset) await writeFile(dest, await store.readBuffer(node.base.hash));
    else {
      const { stream } = await state.engine.readFile({ projectId: state.projectId, versionId: node.base.versionId });
      await pipeline(stream, createWriteStream(dest));
    }
  }
  await chmod(dest, node.executable ? 0o755 : 0o644);
}

/** Moves a backing file into the staging directory: it becomes a new versioned node's content. */
export async function nodeFromBacking(state: MountState, from: string, to: string): Promise<FileNode> {
  const stat = await state.backing.stat(from);
  if (stat?.isSymbolicLink() === true) {
    // A link among ignored names moved to a versioned one: a versioned link from now on.
    const target = Buffer.from(await readlink(state.backing.real(from)));
    await rm(state.backing.real(from));
    return FileNode.link(to, target, state.now(), nsTime(stat.mtimeNs));
  }
  const stagingPath = state.pool.newPath();
  await rename(state.backing.real(from), stagingPath).catch(async (error: unknown) => {
    if ((error as NodeJS.ErrnoException).code !== 'EXDEV') throw error;
    await copyFile(state.backing.real(from), stagingPath);
    await rm(state.backing.real(from));
  });
  const file = await StagingFile.adoptExisting(state.pool, stagingPath);
  const node = new FileNode(to, null, state.now(), stat === null ? undefined : nsTime(stat.mtimeNs));
  node.content = { kind: 'staged', file };
  node.size = file.size;
  node.executable = stat !== null && (stat.mode & 0o100n) !== 0n;
  node.dirty = true;
  return node;
}
