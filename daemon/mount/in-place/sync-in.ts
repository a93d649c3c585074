// Before an in-place mount goes over its directory (`strata mount DIR --import`), what the directory
// holds becomes the project's: this is watch mode's scan (daemon/watch/scan.ts, examine.ts) over the
// directory, with the same capture pipeline and the same index (daemon state: size, mtime, inode,
// exec bit, link or not, per path), so
//  - the first time, every file and symbolic link is imported as one version (ignore rules apply);
//  - every later time (after an unmount wrote the tree back, after a restart, after a kill -9 while
//    mounted) only what differs from the index is looked at: files the user changed while the project
//    was not mounted become versions, files they deleted become tombstones, the rest costs an lstat.
//    Nothing is imported twice, and a file that was never touched is never read again.
// What the mount keeps outside the engine moves into its backing directory (`DIR/.strata/unversioned`,
// on the directory's own filesystem, so each move is a rename): ignored entries (`.git/`, `.strataignore`
// patterns) and names the engine cannot store. Directories become the mount's explicit directories
// (an empty one stays), and modes and owners other than the mount's defaults become its attribute rows
// (a 0600 key stays 0600 through the mount). FIFOs, sockets and devices are not versioned: they move
// into the backing directory too, as if made through the mount (attrs.ts markSpecial).
import { lstat } from 'node:fs/promises';
import { StrataError } from '../../../engine/errors.js';
import type { ScanProgress, HostContext } from '../../host.js';
import type { IgnoreRules } from '../../capture/ignore.js';
import { type ExamineContext, examine, RACY_MTIME } from '../../watch/examine.js';
import { scanTree, type Walk } from '../../watch/scan.js';
import type { MountAttrs } from '../attrs.js';
import { nsTime } from '../file-time.js';
import type { MountTimes } from '../times.js';
import { isVersionable } from '../paths.js';
import type { DirHandle } from './dir-handle.js';
import { type MoveOutcome, moveEntry } from './move.js';

/** The index calls an mtime this recent "racy" (examine.ts RACY_NS): looked at again once it is older. */
const RACY_WAIT_MS = 60;
const PROGRESS_LOG_MS = 5_000;

export interface SyncInDeps {
  /** `dir` is the directory itself, not mounted now; `capture.isIgnored` follows `rules` */
  host: HostContext;
  rules: IgnoreRules;
  root: DirHandle;
  backing: DirHandle;
  attrs: MountAttrs;
  /** the mtimes found become the mount's (a version records its capture time, not the file's) */
  times: MountTimes;
  progress: ScanProgress;
  /** entries found in both places are moved aside here */
  displace: (path: string) => Promise<DirHandle>;
  warn: (message: string) => void;
  /** true once the project is being stopped: the scan ends early (what it versioned stays) */
  aborted: () => boolean;
}

export interface SyncInReport {
  /** files and links looked at (compared with the index) */
  examined: number;
  /** new versions (imported files, changes made while unmounted) and tombstones */
  versioned: number;
  /** ignored entries and unstorable names moved into the backing directory */
  movedToBacking: number;
  /** FIFOs, sockets and devices: not versioned, moved into the backing directory */
  skippedSpecial: number;
}

export async function syncIn(deps: SyncInDeps): Promise<SyncInReport> {
  const { host, rules, progress } = deps;
  const report: SyncInReport = { examined: 0, versioned: 0, movedToBacking: 0, skippedSpecial: 0 };
  const dirs: string[] = [];
  const files: string[] = [];
  const racy: string[] = [];
  const ctx: ExamineContext = {
    host,
    onDirectory: async () => {},
    onDirectoryGone: () => {},
    // Not for exclusion (nothing else runs on the directory yet): to learn which rows came out racy.
    exclusive: async (path, task) => {
      const result = await task();
      if (host.state.index.get(host.projectId, path)?.mtimeNs === RACY_MTIME) racy.push(path);
      return result;
    },
  };

  const walk: Walk = async (onFile) => {
    await seedAttrs(deps, deps.root, '', '');
    const stack = [''];
    while (stack.length > 0) {
      const rel = stack.pop()!;
      const dir = await deps.root.descend(rel);
      if (dir === null) continue; // gone, or a link took its place since it was listed
      try {
        for (const entry of await dir.list()) {
          const path = dir.childPath(entry.name);
          if (path === '.strata') continue;
          const isDir = entry.isDirectory();
          if (!isVersionable(path) || rules.ignores(path, isDir)) {
            const moved = await toBacking(deps, dir, entry.name, path);
            if (moved === 'moved') report.movedToBacking += 1;
            continue;
          }
          if (isDir) {
            dirs.push(path);
            await seedAttrs(deps, dir, entry.name, path);
            stack.push(path);
          } else if (entry.isFile() || entry.isSymbolicLink()) {
            if (entry.isFile()) await seedAttrs(deps, dir, entry.name, path);
            report.examined += 1;
            files.push(path);
            await onFile(path);
          } else {
            // A FIFO, socket or device: not versioned; it lives in the backing directory like one
            // made through the mount, found at its versionable name through its attribute row.
            report.skippedSpecial += 1;
            const st = await lstat(dir.entry(entry.name)).catch(() => null);
            if (st !== null && (await toBacking(deps, dir, entry.name, path)) === 'moved') deps.attrs.markSpecial(path, st.mode);
          }
        }
      } finally {
        await dir.close();
      }
    }
  };

  const before = progress.captured;
  const timer = setInterval(() => {
    host.logger.info({ dir: host.dir, done: progress.done, total: progress.total, versioned: progress.captured }, `importing ${host.dir}: ${progress.done} of ${progress.total} files looked at`);
  }, PROGRESS_LOG_MS);
  try {
    await scanTree(ctx, walk, progress, {
      pace: () => {
        if (deps.aborted()) throw new StrataError('SHUTTING_DOWN', { message: `the import of ${host.dir} was stopped` });
        return undefined;
      },
    });
  } finally {
    clearInterval(timer);
  }
  // A file changed within the index's clock resolution is recorded "racy" (re-read next time); next
  // time is the write-back, which would take the racy row for an edit and version the old bytes
  // again. Once it is older, one more look settles it (no new version unless it really changed).
  if (racy.length > 0) {
    await new Promise((resolve) => setTimeout(resolve, RACY_WAIT_MS));
    for (const path of racy) await examine(ctx, path).catch((error: unknown) => deps.warn(`could not look at ${JSON.stringify(path)} again: ${(error as Error).message}`));
  }
  report.versioned = progress.captured - before;
  // What make and rsync compare: each file's mtime as the directory had it, for the version it is now.
  for (const path of files) {
    const row = host.state.index.get(host.projectId, path);
    if (row === undefined || row.mtimeNs === RACY_MTIME) continue;
    deps.times.set(path, { versionId: row.versionId, mtime: nsTime(BigInt(row.mtimeNs)) });
  }
  // Every directory is one of the mount's explicit directories: it stays when its last file goes,
  // as on any filesystem, and one holding only ignored entries still shows.
  const known = new Set(host.state.emptyDirs.list(host.projectId));
  const add = host.state.db.transaction((paths: string[]) => {
    for (const path of paths) if (!known.has(path)) host.state.emptyDirs.add(host.projectId, path);
  });
  add(dirs);
  return report;
}

async function toBacking(deps: SyncInDeps, dir: DirHandle, name: string, path: string): Promise<MoveOutcome> {
  const parent = dir.path;
  const into = await deps.backing.descend(parent, { create: true });
  if (into === null) {
    deps.warn(`left ${JSON.stringify(path)} in place (hidden while mounted): the backing directory has no directory at ${JSON.stringify(parent)}`);
    return 'skipped';
  }
  try {
    const outcome = await moveEntry({ from: dir, to: into, name, path, displace: deps.displace });
    if (outcome === 'skipped') deps.warn(`left ${JSON.stringify(path)} in place, hidden while mounted: it is on another filesystem (or a mount point), so it cannot be moved into the mount's backing directory`);
    return outcome;
  } finally {
    await into.close();
  }
}

/** A mode or owner other than the mount's defaults becomes an attribute row (attrs.ts). */
async function seedAttrs(deps: SyncInDeps, dir: DirHandle, name: string, path: string): Promise<void> {
  let st: Awaited<ReturnType<typeof lstat>>;
  try {
    st = await lstat(name === '' ? `${dir.self}/.` : dir.entry(name));
  } catch {
    return;
  }
  if (st.isSymbolicLink()) return;
  const kind = st.isDirectory() ? 'dir' : 'file';
  deps.attrs.set(path, kind, (st.mode & 0o100) !== 0, { perm: st.mode & 0o7777, uid: st.uid, gid: st.gid });
}
