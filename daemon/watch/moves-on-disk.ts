// Watch mode, incoming renames (issue 38 item 2): a file another workstation (or `strata mv`) moved
// arrives as a deletion of the old path and the same content at a new one. Written like any other
// incoming file, each costs a copy out of the store and an fsync: a 2,000-file directory renamed on A
// took ~17 s to appear on B's disk after B had it in its history. The file is here already, so it is
// renamed on disk instead — when it is exactly what this directory last versioned at the old path
// (its index row vouches for it: same rule as materialize.ts), and nothing is at the new one. Its index
// row moves with it, so materialize() then finds both paths 'same' and the watcher's events for the
// rename find nothing new. Anything that does not fit is left to materialize() as before.
import { rename } from 'node:fs/promises';
import { openBeneath } from '../beneath.js';
import type { HostContext } from '../host.js';
import { lstatOrNull, statRow, unchangedSinceIndexed } from './examine.js';
import { removeEmptyParents } from './materialize.js';

const CONCURRENCY = 16;

interface Move {
  from: string;
  to: string;
  versionId: string;
  contentHash: string;
  executable: boolean;
}

/**
 * Renames on disk the files `paths` move (old path deleted in the engine, a new path with its content
 * and nothing on disk there). `withPath` serializes with the watcher's examine. Returns the paths
 * done (both of each move): on disk as the engine has them, nothing left for materialize() to do.
 */
export async function moveOnDisk(host: HostContext, paths: string[], withPath: <T>(path: string, task: () => Promise<T>) => Promise<T>): Promise<Set<string>> {
  const moves = await findMoves(host, paths);
  const done = new Set<string>();
  const queue = [...moves];
  const work = async () => {
    for (let move = queue.shift(); move !== undefined; move = queue.shift()) {
      const [first, second] = move.from < move.to ? [move.from, move.to] : [move.to, move.from];
      if (await withPath(first, () => withPath(second, () => moveOne(host, move)))) {
        done.add(move.from);
        done.add(move.to);
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(CONCURRENCY, queue.length) }, work));
  return done;
}

async function findMoves(host: HostContext, paths: string[]): Promise<Move[]> {
  const { engine, projectId, state } = host;
  const gone = new Map<string, string[]>();
  const wanted: Array<{ path: string; versionId: string; contentHash: string; executable: boolean }> = [];
  for (const path of paths) {
    if (host.capture.isIgnored(path)) continue;
    const entry = await engine.stat({ projectId, path });
    const row = state.index.get(projectId, path);
    if (entry === null) {
      if (row === undefined || row.symlink) continue;
      const list = gone.get(row.contentHash) ?? [];
      list.push(path);
      gone.set(row.contentHash, list);
    } else if (!entry.symlink && !entry.dataset && row === undefined) {
      // (The exec bit is compared in moveOne: a move that changed it is left to materialize().)
      wanted.push({ path, versionId: entry.versionId, contentHash: entry.contentHash, executable: entry.executable });
    }
  }
  const moves: Move[] = [];
  for (const want of wanted) {
    const from = gone.get(want.contentHash)?.shift();
    const { path: to, ...rest } = want;
    if (from !== undefined) moves.push({ from, to, ...rest });
  }
  return moves;
}

/** One rename, checked again under the two paths' locks; false: left to materialize(). */
async function moveOne(host: HostContext, move: Move): Promise<boolean> {
  const { state, projectId } = host;
  const row = state.index.get(projectId, move.from);
  if (row === undefined || row.contentHash !== move.contentHash || row.executable !== move.executable || state.index.get(projectId, move.to) !== undefined) return false;
  const fromSplit = split(move.from);
  const toSplit = split(move.to);
  const source = await openBeneath(host.dir, fromSplit.dir, { create: false });
  if (source.kind !== 'dir') return false;
  try {
    const st = await lstatOrNull(source.dir.entry(fromSplit.name));
    if (st === null || !st.isFile() || !(await unchangedSinceIndexed(host.dir, move.from, row, st))) return false;
    const target = await openBeneath(host.dir, toSplit.dir, { create: true });
    if (target.kind !== 'dir') return false;
    try {
      if ((await lstatOrNull(target.dir.entry(toSplit.name))) !== null) return false;
      await rename(source.dir.entry(fromSplit.name), target.dir.entry(toSplit.name));
      const moved = await lstatOrNull(target.dir.entry(toSplit.name));
      state.index.remove(projectId, move.from);
      if (moved !== null) state.index.put(projectId, { path: move.to, ...statRow(moved), contentHash: move.contentHash, versionId: move.versionId });
    } finally {
      await target.dir.close();
    }
  } finally {
    await source.dir.close();
  }
  await removeEmptyParents(host.dir, move.from);
  return true;
}

function split(path: string): { dir: string; name: string } {
  const slash = path.lastIndexOf('/');
  return { dir: slash === -1 ? '' : path.slice(0, slash), name: path.slice(slash + 1) };
}
