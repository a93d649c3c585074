// When an in-place mount ends (`strata unmount DIR`, the daemon stopping), the directory it covered
// receives the project's current tree, so the files are in place without Strata: every change made
// through the mount, new files, deletions, renames, links, exec bits and modes, explicit (empty)
// directories, and what the mount kept unversioned in its backing directory (`.git/`, ignored files).
//
// Only what differs is written. The index (the daemon state's per-path row: what the directory holds,
// as last imported or written) says which version each file on disk is: a path whose engine version
// is the row's is left alone without being read. The rest goes through watch mode's materialize
// (daemon/watch/materialize.ts): a file arrives whole (temp file, fsync, rename), a link as a link,
// nothing is written through a link (directories opened one component at a time, O_NOFOLLOW), and a
// file on disk that is not what the index says — an edit made under the mount after a crash exposed
// the directory — is versioned before it is replaced. Backing entries go back with one rename each.
// Every file and link then gets the times the mount showed for it (materialize stamps what it writes
// with the present, and one left alone keeps the time it had before the mount: make would skip a
// rebuild, rsync copy it again), and its index row the new stat, so watch mode sees no change.
//
// Safe to stop at any point (a kill -9 in the middle): every step leaves whole files and correct
// index rows, the next start imports nothing twice (what was written is what the engine has), and the
// next unmount finishes the job.
import { constants, type Stats } from 'node:fs';
import { chmod, chown, lstat, open, rmdir } from 'node:fs/promises';
import { getSystemErrorName } from 'node:util';
import { writeFileAtomic } from '../../atomic-file.js';
import { type IgnoreRules, STRATAIGNORE } from '../../capture/ignore.js';
import type { HostContext } from '../../host.js';
import { STRATA_GITIGNORE_TEXT } from '../../projects.js';
import { sameAsIndexed, statRow } from '../../watch/examine.js';
import { materialize, type MaterializeResult } from '../../watch/materialize.js';
import type { MountAttrs } from '../attrs.js';
import { type FileTime, timeNs } from '../file-time.js';
import { isVersionable, parentOf } from '../paths.js';
import type { DirHandle } from './dir-handle.js';
import { moveEntry } from './move.js';

/** Files brought to disk at once (each streams from the store; the disk is the limit). */
const WINDOW = 8;
const PAGE = 1_000;
/**
 * Linux's O_PATH (x86-64 and arm64 alike; Node does not export it): a descriptor that names an
 * inode without opening it for IO. With O_NOFOLLOW it names a link itself, so a chmod or chown
 * through /proc/self/fd/N can never reach a link's target (it fails on the link instead).
 */
const O_PATH = 0o10000000;

export interface WriteBackDeps {
  /** `dir` is the directory, no longer mounted */
  host: HostContext;
  root: DirHandle;
  backing: DirHandle;
  /** the mount's explicit directories (they exist even without a file below them) */
  explicitDirs: Iterable<string>;
  /** the modes and owners the mount showed, by path (a hard link's names all answer its file's) */
  attrs: Pick<MountAttrs, 'of'>;
  /** the times `stat` in the mount showed for a versioned file or link, and its content (null: none) */
  times: (path: string) => Promise<{ contentHash: string; mtime: FileTime; atime: FileTime } | null>;
  /** utimensat(2) to the nanosecond, never through a link (Backing.setTimes): 0 or the errno */
  setTimes: (real: string, atime: FileTime, mtime: FileTime) => number;
  /**
   * The project's ignore rules, read from the directory (createIgnoreRules); `host.capture.isIgnored`
   * asks them too. Read again once `.strataignore` itself is back on disk.
   */
  rules: Pick<IgnoreRules, 'ignores' | 'reload'>;
  displace: (path: string) => Promise<DirHandle>;
  projectJson: string;
  warn: (message: string) => void;
}

export interface WriteBackReport {
  /** files and links written (new or changed through the mount) */
  written: number;
  /** files and links removed (deleted or renamed away through the mount) */
  removed: number;
  /** files on disk that differed from what was last imported or written: versioned, not lost */
  keptLocal: number;
  /** paths left as they were, with a warning (a link or a FIFO in the way, ...) */
  skipped: number;
  /** paths whose write failed (an IO error): the next unmount tries again */
  failed: number;
  /** backing entries (ignored, unstorable names, FIFOs) moved back */
  movedBack: number;
  dirsRemoved: number;
  /** files and directories whose mode or owner was set to what the mount showed */
  attrsSet: number;
  /** files and links whose times were set to what the mount showed */
  timesSet: number;
}

export async function writeBack(deps: WriteBackDeps): Promise<WriteBackReport> {
  const report: WriteBackReport = { written: 0, removed: 0, keptLocal: 0, skipped: 0, failed: 0, movedBack: 0, dirsRemoved: 0, attrsSet: 0, timesSet: 0 };
  const { host } = deps;
  const count = (result: MaterializeResult) => {
    if (result === 'written') report.written += 1;
    else if (result === 'removed') report.removed += 1;
    else if (result === 'kept-local') report.keptLocal += 1;
    else if (result === 'skipped') report.skipped += 1;
  };
  const bring = async (path: string) => {
    try {
      count(await materialize(host, path, deps.warn));
    } catch (error) {
      report.failed += 1;
      deps.warn(`could not write ${JSON.stringify(path)} back: ${(error as Error).message}`);
    }
  };

  // What the engine has, against what the index says the disk holds.
  const enginePaths = new Set<string>();
  // Directories the project has: explicit ones and those holding files, each with its ancestors.
  const projectDirs = new Set<string>();
  const addDir = (dir: string) => {
    for (let at = dir; at !== '' && !projectDirs.has(at); at = parentOf(at)) projectDirs.add(at);
  };
  for (const dir of deps.explicitDirs) addDir(dir);
  const toWrite: string[] = [];
  for (let cursor: string | undefined; ; ) {
    const page = await host.engine.listFiles({ projectId: host.projectId, limit: PAGE, ...(cursor === undefined ? {} : { cursor }) });
    for (const entry of page.items) {
      enginePaths.add(entry.path);
      addDir(parentOf(entry.path));
      if (host.state.index.get(host.projectId, entry.path)?.versionId !== entry.versionId) toWrite.push(entry.path);
    }
    if (page.nextCursor === undefined) break;
    cursor = page.nextCursor;
  }
  const toRemove: string[] = [];
  for (let after = ''; ; ) {
    const rows = host.state.index.versionsAfter(host.projectId, after, PAGE);
    if (rows.length === 0) break;
    after = rows.at(-1)!.path;
    for (const row of rows) if (!enginePaths.has(row.path)) toRemove.push(row.path);
  }
  // `.strataignore` first: the rules for everything else are the ones it says.
  for (const list of [toRemove, toWrite]) {
    const at = list.indexOf(STRATAIGNORE);
    if (at !== -1) {
      await bring(list.splice(at, 1)[0]!);
      const problem = deps.rules.reload();
      if (problem !== null) deps.warn(problem);
    }
  }
  // Removals first: a file deleted in the mount may stand where a new directory goes (and the other way).
  await inWindow(toRemove, bring);
  await inWindow(toWrite, bring);
  const { rules } = deps;

  for (const dir of [...deps.explicitDirs].sort()) {
    const created = await deps.root.descend(dir, { create: true });
    if (created === null) {
      report.skipped += 1;
      deps.warn(`could not make the directory ${JSON.stringify(dir)}: a file or a link is in its place`);
    } else {
      await created.close();
    }
  }
  report.movedBack = await moveOut(deps, deps.backing, rules);
  await settle(deps, deps.root, projectDirs, enginePaths, rules, report);
  await applyAttrs(deps, `${deps.root.self}/.`, '', 'dir', report);

  // So CLI commands inside the directory find the project, as in watch mode.
  const marker = await deps.root.child('.strata', { create: true });
  if (marker !== null) {
    try {
      await writeFileAtomic(marker.entry('project.json'), deps.projectJson, 0o644);
      await writeFileAtomic(marker.entry('.gitignore'), STRATA_GITIGNORE_TEXT, 0o644);
      await rmdir(marker.entry('unversioned')).catch(() => undefined);
    } finally {
      await marker.close();
    }
  }
  return report;
}

async function inWindow(paths: string[], task: (path: string) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < paths.length) await task(paths[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(WINDOW, paths.length) }, worker));
}

/**
 * Moves what the backing directory holds back to the same place in the directory. A versionable,
 * not ignored directory there only holds ignored entries below a versioned directory (`src/` for
 * `src/__pycache__/`): its entries go back one by one, everything else moves whole.
 */
export async function moveOut(deps: Pick<WriteBackDeps, 'root' | 'displace' | 'warn'>, from: DirHandle, rules: Pick<IgnoreRules, 'ignores'>): Promise<number> {
  let moved = 0;
  for (const entry of await from.list()) {
    const path = from.childPath(entry.name);
    if (entry.isDirectory() && isVersionable(path) && !rules.ignores(path, true)) {
      const inner = await from.child(entry.name);
      if (inner === null) continue;
      try {
        moved += await moveOut(deps, inner, rules);
      } finally {
        await inner.close();
      }
      await rmdir(from.entry(entry.name)).catch(() => undefined);
      continue;
    }
    const to = await deps.root.descend(from.path, { create: true });
    if (to === null) {
      deps.warn(`left ${JSON.stringify(path)} in the backing directory (.strata/unversioned): a file or a link is where its directory should be`);
      continue;
    }
    try {
      const outcome = await moveEntry({ from, to, name: entry.name, path, displace: deps.displace });
      if (outcome === 'moved') moved += 1;
      else if (outcome === 'skipped') deps.warn(`left ${JSON.stringify(path)} in the backing directory (.strata/unversioned): it cannot be renamed there`);
    } finally {
      await to.close();
    }
  }
  return moved;
}

/**
 * One pass over the directory: modes and owners as the mount showed them, and directories the project
 * no longer has (removed or renamed through the mount) removed when empty. Unversioned entries (back
 * from the backing directory, or left in place) keep what they have.
 */
async function settle(deps: WriteBackDeps, dir: DirHandle, projectDirs: Set<string>, enginePaths: Set<string>, rules: WriteBackDeps['rules'], report: WriteBackReport): Promise<void> {
  for (const entry of await dir.list()) {
    const path = dir.childPath(entry.name);
    if (path === '.strata') continue;
    const isDir = entry.isDirectory();
    if (!isVersionable(path) || rules.ignores(path, isDir)) continue;
    if (isDir) {
      const inner = await dir.child(entry.name);
      if (inner === null) continue;
      try {
        await settle(deps, inner, projectDirs, enginePaths, rules, report);
        if (projectDirs.has(path)) await applyAttrs(deps, `${inner.self}/.`, path, 'dir', report);
      } finally {
        await inner.close();
      }
      if (!projectDirs.has(path)) {
        try {
          await rmdir(dir.entry(entry.name));
          report.dirsRemoved += 1;
        } catch {
          // not empty (something unversioned is in it): it stays
        }
      }
    } else if (entry.isFile()) {
      await applyAttrs(deps, dir.entry(entry.name), path, 'file', report);
      if (enginePaths.has(path)) await applyTimes(deps, dir.entry(entry.name), path, report);
    } else if (entry.isSymbolicLink() && enginePaths.has(path)) {
      await applyTimes(deps, dir.entry(entry.name), path, report);
    }
  }
}

/**
 * The times the mount showed, on a file or link that holds what the mount showed there: its index row
 * says which content it holds (and the stat vouches for the row), and it is what the mount showed.
 * setTimes (utimensat, to the nanosecond) never follows a link; the row then gets the new stat.
 */
async function applyTimes(deps: WriteBackDeps, at: string, path: string, report: WriteBackReport): Promise<void> {
  const { host } = deps;
  try {
    const row = host.state.index.get(host.projectId, path);
    if (row === undefined) return;
    const st = await lstat(at, { bigint: true });
    if (!sameAsIndexed(row, st)) return;
    const shown = await deps.times(path);
    if (shown === null || shown.contentHash !== row.contentHash) return;
    if (st.mtimeNs === timeNs(shown.mtime)) return;
    const errno = deps.setTimes(at, shown.atime, shown.mtime);
    if (errno !== 0) throw new Error(`utimensat: ${getSystemErrorName(-errno)}`);
    const after = await lstat(at, { bigint: true });
    if (after.ino === st.ino && after.size === st.size) host.state.index.put(host.projectId, { ...row, ...statRow(after) });
    report.timesSet += 1;
  } catch (error) {
    deps.warn(`could not set the times of ${JSON.stringify(path)}: ${(error as Error).message}`);
  }
}

/**
 * The mode and owner the mount showed. An lstat first (almost every entry is right already); a change
 * goes through an O_PATH descriptor that cannot follow a link: chown, then chmod (a chown clears
 * setuid/setgid).
 */
async function applyAttrs(deps: WriteBackDeps, at: string, path: string, kind: 'file' | 'dir', report: WriteBackReport): Promise<void> {
  const root = process.getuid?.() === 0;
  const differs = (st: Stats) => {
    const want = deps.attrs.of(path, kind, kind === 'file' && (st.mode & 0o100) !== 0);
    return { want, owner: root && (st.uid !== want.uid || st.gid !== want.gid), mode: (st.mode & 0o7777) !== want.perm };
  };
  try {
    const seen = differs(await lstat(at));
    if (!seen.owner && !seen.mode) return;
  } catch {
    return;
  }
  let handle: Awaited<ReturnType<typeof open>>;
  try {
    handle = await open(at, O_PATH | constants.O_NOFOLLOW);
  } catch {
    return;
  }
  try {
    const st = await handle.stat();
    if (kind === 'file' ? !st.isFile() : !st.isDirectory()) return;
    const { want, owner } = differs(st);
    const self = `/proc/self/fd/${handle.fd}`;
    if (owner) await chown(self, want.uid, want.gid);
    if ((st.mode & 0o7777) !== want.perm || owner) await chmod(self, want.perm);
    report.attrsSet += 1;
  } catch (error) {
    deps.warn(`could not set the mode of ${JSON.stringify(path)}: ${(error as Error).message}`);
  } finally {
    await handle.close();
  }
}
