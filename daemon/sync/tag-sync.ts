// Tags both ways (issue 14): a three-way merge of this workstation's tags, the server's, and the tags
// both last agreed on (kept in the daemon's state). A tag changed on one side only — added, moved to
// another snapshot, removed — is carried to the other; a tag changed on both sides since they last
// agreed takes the server's (the first workstation to reach it won), and the log says so. A tag
// whose snapshot has not reached the other side yet waits for the next round.
import type { Logger } from 'pino';
import type { Engine } from '../../engine/engine-api.js';
import type { Actor } from '../../engine/types.js';
import { isStrataError } from '../../engine/errors.js';
import type { DaemonState } from '../state.js';
import { type Remote, RemoteError } from './remote.js';

export interface TagSyncDeps {
  engine: Engine;
  state: DaemonState;
  projectId: string;
  actor: Actor;
  log: Logger;
}

type TagMap = Map<string, string>;

const FLAG = 'sync.tagsAgreed';

/**
 * One round of the merge; returns how many tags changed on either side. `pushLocal` false (a
 * read-only workstation): the server's changes still come down, this workstation's stay here.
 */
export async function syncTags(deps: TagSyncDeps, remote: Remote, options: { pushLocal: boolean; signal: AbortSignal }): Promise<number> {
  const { signal } = options;
  const { engine, state, projectId, actor, log } = deps;
  const local: TagMap = new Map((await engine.listTags(projectId)).map((t) => [t.tag, t.snapshotId]));
  const server: TagMap = new Map((await remote.tags(signal)).map((t) => [t.tag, t.snapshotId]));
  const agreed: TagMap = new Map(Object.entries(state.flags.get<Record<string, string>>(projectId, FLAG) ?? {}));
  let changed = 0;
  for (const tag of new Set([...local.keys(), ...server.keys(), ...agreed.keys()])) {
    const here = local.get(tag);
    const there = server.get(tag);
    const before = agreed.get(tag);
    if (here === there) {
      if (here === undefined) agreed.delete(tag);
      else agreed.set(tag, here);
      continue;
    }
    if (here === before) {
      // Changed on the server only (or on both: the server's wins).
      if (await applyHere(engine, projectId, actor, tag, there)) {
        setOrDelete(agreed, tag, there);
        changed++;
      }
      continue;
    }
    if (there === before && !options.pushLocal) continue;
    if (there !== before) log.warn({ tag, here, there }, 'tag changed here and on the server since they last agreed: keeping the server\'s');
    if (there !== before ? await applyHere(engine, projectId, actor, tag, there) : await applyThere(remote, tag, here, there, signal)) {
      setOrDelete(agreed, tag, there !== before ? there : here);
      changed++;
    }
  }
  state.flags.set(projectId, FLAG, Object.fromEntries(agreed));
  return changed;
}

/** Whether this workstation's tags differ from those last agreed on (a local query: the push loop asks often). */
export async function localTagsChanged(deps: Pick<TagSyncDeps, 'engine' | 'state' | 'projectId'>): Promise<boolean> {
  const agreed = deps.state.flags.get<Record<string, string>>(deps.projectId, FLAG) ?? {};
  const local = await deps.engine.listTags(deps.projectId);
  return local.length !== Object.keys(agreed).length || local.some((t) => agreed[t.tag] !== t.snapshotId);
}

function setOrDelete(map: TagMap, tag: string, snapshotId: string | undefined): void {
  if (snapshotId === undefined) map.delete(tag);
  else map.set(tag, snapshotId);
}

/** Makes this workstation's tag point where the server's does (or removes it); false: its snapshot is not here yet. */
async function applyHere(engine: Engine, projectId: string, actor: Actor, tag: string, snapshotId: string | undefined): Promise<boolean> {
  if (snapshotId !== undefined) {
    try {
      await engine.getSnapshot(projectId, snapshotId);
    } catch (error) {
      if (isStrataError(error, 'SNAPSHOT_NOT_FOUND')) return false;
      throw error;
    }
  }
  if ((await engine.listTags(projectId)).some((t) => t.tag === tag)) await engine.removeTag({ projectId, tag, actor });
  if (snapshotId !== undefined) await engine.addTag({ projectId, snapshotId, tag, actor });
  return true;
}

/** Makes the server's tag point where this workstation's does (or removes it); false: its snapshot is not there yet. */
async function applyThere(remote: Remote, tag: string, snapshotId: string | undefined, current: string | undefined, signal: AbortSignal): Promise<boolean> {
  try {
    if (current !== undefined) await remote.removeTag(tag, signal);
    if (snapshotId !== undefined) await remote.addTag(snapshotId, tag, signal);
    return true;
  } catch (error) {
    if (error instanceof RemoteError && error.code === 'SNAPSHOT_NOT_FOUND') return false;
    throw error;
  }
}
