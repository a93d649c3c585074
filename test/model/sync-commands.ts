// The commands of the sync model (issue 38) a user runs in one workstation's project directory:
// `strata snapshot create`, `snapshot restore`, `restore VERSION` (a file back to one of its
// versions), `tag add`, `tag rm`, `retention set`. With other workstations writing at the same time
// nothing predicts their exact effect, so each is judged by its exit code (what a refusal may be)
// and by the end checks: a restore is a write of old contents (convergence and no loss hold as for
// any write), a snapshot or tag made anywhere is on every workstation once they converge.

import type { Snapshot, VersionRecord } from '../../engine/types.js';
import { SLOTS } from './fs-ops.js';
import type { SyncAction } from './sync-steps.js';
import type { Station } from './sync-world.js';

export type CommandAction = Extract<SyncAction, { op: 'snapshot' | 'restoreSnapshot' | 'restoreVersion' | 'tag' | 'untag' | 'retention' }>;

export const COMMAND_OPS = new Set<string>(['snapshot', 'restoreSnapshot', 'restoreVersion', 'tag', 'untag', 'retention']);

/** The workstation's snapshots, newest first (its own and those pulled from the server). */
export async function snapshotsOf(view: { api<T>(method: string, path: string): Promise<T>; projectPath(suffix: string): string }): Promise<Snapshot[]> {
  const out: Snapshot[] = [];
  let cursor: string | undefined;
  do {
    const page = await view.api<{ items: Snapshot[]; nextCursor?: string }>('GET', view.projectPath(`/fs/snapshots?limit=200${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`));
    out.push(...page.items);
    cursor = page.nextCursor;
  } while (cursor);
  return out;
}

/**
 * Runs the command on the workstation (its daemon running). Returns the transcript line (null:
 * nothing to act on, skipped) and what disagreed.
 */
export async function runCommand(station: Station, action: CommandAction): Promise<{ line: string | null; failures: string[]; restore: boolean }> {
  const { ws } = station;
  const failures: string[] = [];
  const run = async (args: string[], allowed: number[]) => {
    const result = await ws.cli(args, { timeoutMs: 120_000 });
    if (!allowed.includes(result.code ?? -1)) failures.push(`${station.name}: strata ${args.join(' ')} exited ${result.code} (expected ${allowed.join(' or ')}): ${(result.stderr || result.stdout).trim().slice(0, 600)}`);
    return result;
  };
  const at = `${station.name}: `;
  switch (action.op) {
    case 'snapshot': {
      const result = await run(['snapshot', 'create'], [0]);
      return { line: `${at}strata snapshot create  # exit ${result.code}`, failures, restore: false };
    }
    case 'restoreSnapshot': {
      const snapshots = await snapshotsOf(ws);
      if (snapshots.length === 0) return { line: null, failures, restore: false };
      const snapshot = snapshots[action.pick % snapshots.length]!;
      // 4: a directory with files the project does not version stands where a restored file goes.
      const result = await run(['snapshot', 'restore', snapshot.snapshotId], [0, 4]);
      return { line: `${at}strata snapshot restore ${snapshot.snapshotId} (#${snapshot.seq})  # exit ${result.code}`, failures, restore: true };
    }
    case 'restoreVersion': {
      const path = SLOTS[action.slot]!;
      const history = await ws.api<{ items: VersionRecord[] }>('GET', ws.projectPath(`/history?path=${encodeURIComponent(path)}&limit=1000`));
      const versions = history.items.filter((v) => v.contentHash !== null && v.path === path);
      if (versions.length === 0) return { line: null, failures, restore: false };
      const version = versions[action.pick % versions.length]!;
      // 4: something the restore must not replace stands at the path (a directory with files).
      const result = await run(['restore', version.versionId], [0, 4]);
      return { line: `${at}strata restore ${version.versionId}  # ${path} (${version.size} B${version.symlink ? ', a link' : ''}), exit ${result.code}`, failures, restore: true };
    }
    case 'tag': {
      const snapshots = await snapshotsOf(ws);
      if (snapshots.length === 0) return { line: null, failures, restore: false };
      const snapshot = snapshots[action.pick % snapshots.length]!;
      // 4: the name is taken (here, or by another workstation whose tag came down).
      const result = await run(['tag', 'add', snapshot.snapshotId, `t${action.name}`], [0, 4]);
      return { line: `${at}strata tag add ${snapshot.snapshotId} t${action.name}  # exit ${result.code}`, failures, restore: false };
    }
    case 'untag': {
      const result = await run(['tag', 'rm', `t${action.name}`], [0, 3]);
      return { line: `${at}strata tag rm t${action.name}  # exit ${result.code}`, failures, restore: false };
    }
    case 'retention': {
      const result = await run(['retention', 'set', String(action.keep)], [0]);
      return { line: `${at}strata retention set ${action.keep}  # exit ${result.code}`, failures, restore: false };
    }
  }
}
