// The mirror of sync-adopt.ts's makeWayBelow (the sync model's seed 42000 path 8): with A's daemon
// down, A ran `mv a/a b; echo v28 > a/a/b` while B replaced the directory `a` by a file. A's daemon
// back, it pushed `a/a/b`; the server, whose `a` is a file, kept it as `a (conflict wsA …)/a/b`. A
// kept the directory `a` and skipped the server's file for good ("'a' is a directory", needs the
// user) while B and C converged — though nothing of A's would be lost: its bytes are the copy.
import type { EngineContext } from '../context.js';
import { isStrataError } from '../errors.js';
import type { Actor, Entry, VersionRecord } from '../types.js';
import { commitOne } from './write-file.js';

/** Files below a directory at most that make way (a larger tree is left to the user). */
const MAX_FILES = 1000;

/**
 * The server's current file `record.path` arrives where this workstation has files below that path
 * (a directory). A file here that has been pushed and is still here at its path was not taken by the
 * server there: the server's head has a file at `record.path`, so had it taken the file, its deletion
 * would have come in the feed before this version. It kept it as a conflict copy, which comes down
 * in the feed as a version of its own (before or after this one: copyOf). So each such file makes way
 * — a deletion recorded as pulled — and the server's file is taken. All or none: one not pushed yet
 * defers the pull ('push first': the server decides); one pulled from the server, one it refused (on
 * no server version), or a directory the host may not replace (`mayReplace`: on disk it holds files
 * the project does not have, or ignored ones) leaves everything, and the version is skipped (it
 * needs the user).
 */
export async function makeWayAbove(
  ctx: EngineContext,
  input: { projectId: string; pushedSeq: number; record: VersionRecord; refused: ReadonlySet<string>; mayReplace?: (path: string) => Promise<boolean> },
): Promise<'push first' | 'done'> {
  const { projectId, pushedSeq, record, refused } = input;
  const { versions } = ctx.repository;
  if ((await versions.writeConflict(projectId, record.path))?.kind !== 'directory') return 'done';
  const below: Entry[] = [];
  let cursor: string | undefined;
  do {
    const page = await versions.listEntries(projectId, { prefix: `${record.path}/`, limit: 1000, ...(cursor === undefined ? {} : { cursor }) });
    below.push(...page.items);
    cursor = page.nextCursor;
  } while (cursor !== undefined && below.length <= MAX_FILES);
  if (below.length === 0 || below.length > MAX_FILES) return 'done';
  let unpushed = false;
  for (const entry of below) {
    const head = await versions.pathHead(projectId, entry.path);
    if (head === null || head.versionId !== entry.versionId || head.pulled || refused.has(entry.versionId)) return 'done';
    if (head.seq > pushedSeq) unpushed = true;
  }
  if (unpushed) return 'push first';
  if (input.mayReplace !== undefined && !(await input.mayReplace(record.path))) return 'done';
  for (const entry of below) {
    // The change that took the directory's place (the server's file) is whose this is.
    if ((await makeWay(ctx, projectId, entry, record.actor)) === 'push first') return 'push first';
  }
  return 'done';
}

/**
 * The file `entry` here makes way for a change that came from the server: its deletion, recorded as
 * pulled (the server has nothing there to delete) and by `actor`, whose change it is. Changed here
 * meanwhile: that change is pushed first ('push first'), and the pull comes back to this.
 */
export async function makeWay(ctx: EngineContext, projectId: string, entry: Pick<Entry, 'path' | 'versionId'>, actor: Actor): Promise<'push first' | 'done'> {
  const deletion: VersionRecord = {
    versionId: ctx.ids.uuid(),
    projectId,
    path: entry.path,
    contentHash: null,
    size: 0,
    actor,
    timestamp: new Date(ctx.clock.now()).toISOString(),
    kind: 'delete',
    restoredFrom: null,
    executable: false,
    symlink: false,
    dataset: false,
  };
  try {
    await commitOne(ctx, { record: deletion, pulled: true, expectedCurrent: entry.versionId });
  } catch (error) {
    if (isStrataError(error, 'STALE_BASE_VERSION')) return 'push first';
    throw error;
  }
  ctx.retention.schedule(projectId, entry.path);
  return 'done';
}
