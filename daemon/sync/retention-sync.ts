// Retention both ways (issue 14): the project's setting (versions kept per path) is one value, merged
// three ways like the tags: this workstation's, the server's, and the value both last agreed on (kept
// in the daemon's state; before the first agreement, the default: unlimited). A side that changed it
// since is carried to the other; changed on both sides, the server's stays. Each side then prunes to
// its own setting, and versions made here that the server has not had yet are never pruned (the sync
// hold), so a lower setting from the server cannot take them.
//
// Setting it on the server takes the project's `manage` right. A workstation whose key lacks it keeps
// its own setting, says so once, and does not ask again until the setting here changes.
import type { Logger } from 'pino';
import type { Engine } from '../../engine/engine-api.js';
import type { Actor } from '../../engine/types.js';
import type { DaemonState } from '../state.js';
import { type Remote, RemoteError } from './remote.js';

export interface RetentionSyncDeps {
  engine: Engine;
  state: DaemonState;
  projectId: string;
  actor: Actor;
  log: Logger;
}

interface Agreement {
  /** the setting both sides last had */
  agreed: number;
  /** this workstation's setting, which the server refused (403) */
  refused?: number;
}

const FLAG = 'sync.retentionAgreed';
/** A new project's setting (engine/commands/projects.ts): what both sides had before either changed it. */
const UNLIMITED = 0;

/** One round; true when either side's setting changed. `pushLocal` false: a read-only workstation. */
export async function syncRetention(deps: RetentionSyncDeps, remote: Remote, options: { pushLocal: boolean; signal: AbortSignal }): Promise<boolean> {
  const { engine, state, projectId, actor, log } = deps;
  const here = (await engine.getRetention(projectId)).maxVersions;
  const there = await remote.retention(options.signal);
  const memo = agreementOf(state, projectId);
  const save = (next: Agreement) => state.flags.set(projectId, FLAG, next);
  if (here === there) {
    if (memo.agreed !== here || memo.refused !== undefined) save({ agreed: here });
    return false;
  }
  if (here === memo.agreed || there !== memo.agreed) {
    // Changed on the server only, or on both sides (the server's stays, and the log says so).
    if (here !== memo.agreed) log.warn({ here, there }, 'retention changed here and on the server since they last agreed: keeping the server\'s');
    await engine.setRetention({ projectId, maxVersions: there, actor });
    log.info({ maxVersions: there }, 'retention set from the server');
    save({ agreed: there });
    return true;
  }
  // Changed here only.
  if (!options.pushLocal || memo.refused === here) return false;
  try {
    await remote.setRetention(here, options.signal);
  } catch (error) {
    if (!(error instanceof RemoteError && error.kind === 'forbidden')) throw error;
    log.warn({ maxVersions: here }, 'the server did not take this workstation\'s retention setting (setting it needs the project\'s manage right): it applies here only');
    save({ agreed: memo.agreed, refused: here });
    return false;
  }
  log.info({ maxVersions: here }, 'retention sent to the server');
  save({ agreed: here });
  return true;
}

/** Whether this workstation's setting differs from the one last agreed on and was not refused (a local question). */
export async function localRetentionChanged(deps: Pick<RetentionSyncDeps, 'engine' | 'state' | 'projectId'>): Promise<boolean> {
  const here = (await deps.engine.getRetention(deps.projectId)).maxVersions;
  const memo = agreementOf(deps.state, deps.projectId);
  return here !== memo.agreed && here !== memo.refused;
}

function agreementOf(state: DaemonState, projectId: string): Agreement {
  return state.flags.get<Agreement>(projectId, FLAG) ?? { agreed: UNLIMITED };
}
