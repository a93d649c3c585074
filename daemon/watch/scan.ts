// Initial and catch-up scans: walk the tree, compare each file or symbolic link with the index (size,
// mtime, inode, exec bit, link or not — an lstat, no read; links are listed, never entered), examine only what differs (hash and version it if the content really
// changed), then treat indexed paths the walk did not find as deleted while the daemon was down.
// Polling mode (network filesystems, exhausted inotify) runs the same scan on an interval.

import { lstat } from 'node:fs/promises';
import { diskPath } from '../../engine/raw-names.js';
import { listNames } from './list-names.js';
import type { ScanProgress } from '../host.js';
import { type ExamineContext, type ExamineResult, examine, isVersionable, lstatBeneath, sameAsIndexed } from './examine.js';

/** Examinations in flight during a scan: enough to keep the hash workers and batcher busy. */
const SCAN_WINDOW = 64;

export type Walk = (onFile: (path: string) => Promise<void>) => Promise<void>;

/**
 * A plain recursive walk (polling mode; watch mode walks while it adds watches instead). Names are read
 * as bytes and recorded by engine/raw-names.ts encodeName; one it cannot record goes to `onBadName`.
 */
export function plainWalk(root: string, ignoreDir: (path: string) => boolean, onBadName?: (dir: string, name: Buffer, directory: boolean) => void): Walk {
  return async (onFile) => {
    const stack = [''];
    while (stack.length > 0) {
      const dir = stack.pop()!;
      let listed: Awaited<ReturnType<typeof listNames>>;
      try {
        listed = await listNames(diskPath(root, dir));
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code;
        if (code === 'ENOENT' || code === 'ENOTDIR') continue;
        throw error;
      }
      for await (const { name, raw, entry } of listed) {
        if (name === null) {
          if (entry.isDirectory() || entry.isFile() || entry.isSymbolicLink()) onBadName?.(dir, raw!, entry.isDirectory());
          continue;
        }
        const child = dir === '' ? name : `${dir}/${name}`;
        if (entry.isDirectory()) {
          if (!ignoreDir(child)) stack.push(child);
        } else if (entry.isFile() || entry.isSymbolicLink()) await onFile(child);
      }
    }
  };
}

/** What a reconciliation (reconcile.ts) adds to a plain catch-up scan. */
export interface ScanOptions {
  /** paths the caller handles already (an event in its settle delay): left to it */
  skip?(path: string): boolean;
  /** called before each path; a promise pauses the scan (low priority), a throw aborts it */
  pace?(): Promise<void> | undefined;
  /** the outcome of each path the stat comparison could not settle; `gone` for indexed paths not found */
  onExamined?(result: ExamineResult, gone: boolean): void;
}

export async function scanTree(ctx: ExamineContext, walk: Walk, progress: ScanProgress, options: ScanOptions = {}): Promise<void> {
  const inFlight = new Set<Promise<void>>();
  try {
    await scanPasses(ctx, walk, progress, options, inFlight);
  } finally {
    // Aborted (a pace() throw): examinations already started still finish before the caller moves on.
    await Promise.all(inFlight);
  }
}

async function scanPasses(ctx: ExamineContext, walk: Walk, progress: ScanProgress, options: ScanOptions, inFlight: Set<Promise<void>>): Promise<void> {
  const { host } = ctx;
  const indexedAtStart = host.state.index.count(host.projectId);
  // A full window waits for one examine to end. (Promise.race over the window attached a reaction to
  // every promise in it, per file: 64 per file of a 200,000-file import, all garbage.)
  const waiting: Array<() => void> = [];
  const room = async () => {
    while (inFlight.size >= SCAN_WINDOW) await new Promise<void>((resolve) => waiting.push(resolve));
  };
  const run = (path: string, gone = false) => {
    // One at a time per path with the examines events trigger: two at once could leave the index
    // row of the older look behind.
    const look = () => examine(ctx, path);
    const task = (ctx.exclusive ? ctx.exclusive(path, look) : look()).then(
      (result) => {
        progress.done += 1;
        if (result === 'captured') progress.captured += 1;
        options.onExamined?.(result, gone);
      },
      (error: unknown) => {
        progress.done += 1;
        host.logger.warn({ path, err: (error as Error).message }, 'scan could not examine a path');
      },
    );
    const tracked = task.finally(() => {
      inFlight.delete(tracked);
      waiting.shift()?.();
    });
    inFlight.add(tracked);
  };

  await walk(async (path) => {
    const paused = options.pace?.();
    if (paused) await paused;
    if (host.capture.isIgnored(path) || options.skip?.(path)) return;
    progress.total += 1;
    const row = host.state.index.get(host.projectId, path);
    if (row) {
      try {
        if (sameAsIndexed(row, await lstat(diskPath(host.dir, path), { bigint: true }))) {
          progress.done += 1;
          return;
        }
      } catch {
        // vanished since the walk saw it: examine() records that
      }
    }
    run(path);
    await room();
  });
  await Promise.all(inFlight);

  // Deleted while nobody watched: indexed paths that no longer hold a file. A stat per indexed path,
  // page by page, rather than a set of every path the walk saw (20-30 MiB at 200,000 files); nothing
  // can be missing on a first scan.
  if (indexedAtStart > 0) {
    let after = '';
    for (;;) {
      const page = host.state.index.pathsAfter(host.projectId, after, 1_000);
      if (page.length === 0) break;
      after = page.at(-1)!;
      for (const path of page) {
        const paused = options.pace?.();
        if (paused) await paused;
        if (host.capture.isIgnored(path) || options.skip?.(path)) continue;
        // A file or link still there, reached through real directories (not through a link that took a directory's place).
        if (isVersionable(await lstatBeneath(host.dir, path).catch(() => null))) continue;
        progress.total += 1;
        run(path, true);
        await room();
      }
    }
    await Promise.all(inFlight);
  }
  progress.finished = true;
}
