// Where the mount's captures go: straight into the engine, in-process (never over HTTP). Writes use
// `ifChanged` (a touch, or a save that changed nothing, is not a version) and, for staging files,
// `adopt` with the hash the staging worker computed while the bytes were written — so versioning a
// 2 GB file costs a rename, not a second write of 2 GB.
import { rm } from 'node:fs/promises';
import type { Engine, WriteInput } from '../../engine/engine-api.js';
import { StrataError } from '../../engine/errors.js';
import type { Actor, ContentHash, Entry } from '../../engine/types.js';

export type SinkContent = Uint8Array | AsyncIterable<Uint8Array> | { file: string; knownHash?: ContentHash; adopt: boolean; size?: number };

export interface SinkResult {
  entry: Entry;
  /** versions created (none when the write changed nothing) */
  versionIds: string[];
  /** false: the size policy keeps only this path's current content (WriteResult.historyKept) */
  historyKept?: boolean;
}

export type RemoveResult = { versionIds: string[] } | 'absent' | 'gave way';

export interface MountSink {
  /**
   * `symlink`: the content is a symbolic link's target. A Uint8Array given here is the sink's from then
   * on: the capture thread takes it by transfer, which leaves the caller's view empty (detached).
   */
  write(path: string, content: SinkContent, executable: boolean, symlink?: boolean): Promise<SinkResult>;
  /**
   * Tombstone; 'absent' when the engine had nothing there. `base`: the version the name showed when
   * it was removed — a newer one (pulled from elsewhere, written through the API) is not deleted by
   * it: 'gave way'.
   */
  remove(path: string, base?: string): Promise<RemoveResult>;
  /** One rename record pair, so `to`'s history links back to `from`. */
  rename(from: string, to: string): Promise<SinkResult>;
  /** A request touching `path` is under way in another thread (capture-thread.ts); absent = never. */
  busy?(path: string): boolean;
  /** Releases what the sink holds (its thread); called after the mount's last capture. */
  close?(): Promise<void>;
}

/** The mount writes local files of any size: the HTTP upload limit does not apply. */
const NO_LIMIT = Number.MAX_SAFE_INTEGER;

export function createEngineSink(engine: Engine, projectId: string, actor: Actor): MountSink {
  return {
    async write(path, content, executable, symlink = false) {
      const input: WriteInput = {
        projectId,
        path,
        actor,
        content: isFileContent(content)
          ? { file: content.file, adopt: content.adopt, ...(content.knownHash ? { knownHash: content.knownHash } : {}), ...(content.size === undefined ? {} : { size: content.size }) }
          : content,
        executable,
        symlink,
        ifChanged: true,
        maxBytes: NO_LIMIT,
      };
      const result = await engine.writeFile(input);
      // A store that cannot adopt copied the file instead; the staging file is ours to remove then.
      if (isFileContent(content) && content.adopt) await rm(content.file, { force: true });
      return {
        entry: result.entry,
        versionIds: result.unchanged === true ? [] : [result.version.versionId],
        ...(result.historyKept === undefined ? {} : { historyKept: result.historyKept }),
      };
    },
    async remove(path, base) {
      try {
        const { version } = await engine.deleteFile({ projectId, path, actor, ...(base === undefined ? {} : { baseVersionId: base }) });
        return { versionIds: [version.versionId] };
      } catch (error) {
        // Changed elsewhere after the name was removed here: the newer file stays (as in watch mode).
        if (error instanceof StrataError && error.code === 'STALE_BASE_VERSION') return 'gave way';
        // A directory there now means the file is gone already.
        if (error instanceof StrataError && (error.code === 'PATH_NOT_FOUND' || error.code === 'PATH_IS_DIRECTORY')) return 'absent';
        throw error;
      }
    },
    async rename(from, to) {
      const { deleted, created } = await engine.renameFile({ projectId, from, to, actor, overwrite: true });
      return { entry: created.entry, versionIds: [deleted.versionId, created.version.versionId] };
    },
  };
}

function isFileContent(content: SinkContent): content is { file: string; knownHash?: ContentHash; adopt: boolean } {
  return !(content instanceof Uint8Array) && 'file' in content;
}
