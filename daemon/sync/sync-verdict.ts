// Whether a linked project is in sync, decided in one place from facts (issue 38). Users act on "in
// sync" — shut the laptop, start the job on the cluster, delete the local copy — and every surface
// (`strata sync status`, `sync wait`, `strata status`, the web page, the control API) said it from
// queues being empty: a workstation whose own delete guard held every incoming change, or whose disk
// was full, said "in sync" for as long as its push queue was empty. Here nothing is assumed: each
// fact that keeps the directory and the server's head apart is a reason, and in sync means no reason.

/** What this workstation knows, at one moment, about itself and the server. */
export interface SyncFacts {
  /** the sync loops have not run yet (the catch-up scan of the directory comes first) */
  starting: boolean;
  /** a loop failed outside its error handling and stopped (restart the daemon) */
  stoppedLoop: string | null;
  /** sync does not run until the user acts: no credential, or the server refused it (and what to do) */
  paused: string | null;
  /** the server could not be reached at the last attempt */
  offline: { message: string; retryAt: string | null } | null;
  /** changes on disk not yet versions (watch mode's settle delay and queue, a mount's unversioned files) */
  capturing: number;
  /** versions made here that the server does not have yet */
  notPushed: number;
  /** the server does not accept this workstation's changes (a viewer's or read-only member's key) */
  readOnly: boolean;
  /**
   * The server has changes this workstation has not applied: true, false, or null when unknown
   * (never asked since the last change, or the answer is old).
   */
  serverAhead: boolean | null;
  /** watch mode: the project's changes (pulled ones among them) are not all on disk yet */
  diskBehind: boolean;
  /** paths the project has that could not be written here, and why (a full disk, a permission) */
  notOnDisk: { count: number; example: string | null; /** of them, those the disk had no room for (ENOSPC, EDQUOT) */ diskFull?: number };
  /** this workstation's own mass-delete guard tripped: it records no deletion and applies nothing incoming */
  localGuard: { missing: number; since: string | null } | null;
  /** the incoming mass-delete guard holds the server's deletions of these many files */
  heldIncoming: { deletes: number; files: number } | null;
  /** versions made here that the server refused for good, by path (a change of the path clears one) */
  refused: { count: number; example: string | null; /** the server's cause for the example (its message and code) */ reason?: string | null };
  /** the server's versions this workstation cannot take, per reason (a file where its directory is here) */
  skipped: Record<string, number>;
  /** files here whose names the project cannot record (they are neither versioned nor synced) */
  unrepresentable: { count: number; example: string | null };
}

export type SyncReasonCode =
  | 'STARTING'
  | 'LOOP_STOPPED'
  | 'PAUSED'
  | 'OFFLINE'
  | 'CAPTURING'
  | 'NOT_PUSHED'
  | 'READ_ONLY'
  | 'NOT_PULLED'
  | 'PULL_UNCONFIRMED'
  | 'NOT_ON_DISK'
  | 'WRITE_FAILED'
  | 'LOCAL_GUARD'
  | 'HELD'
  | 'REFUSED'
  | 'SKIPPED'
  | 'UNREPRESENTABLE';

export interface SyncReason {
  code: SyncReasonCode;
  message: string;
  /**
   * Waiting does not end it: the user must act (confirm, reset a guard, free space, sign in). `sync
   * wait` stops at once with it instead of waiting for its timeout.
   */
  needsYou: boolean;
}

export interface SyncVerdict {
  inSync: boolean;
  /** empty exactly when in sync; the first is the one worth saying first */
  reasons: SyncReason[];
}

const files = (n: number) => `${n} file${n === 1 ? '' : 's'}`;
const versions = (n: number) => `${n} version${n === 1 ? '' : 's'}`;
const example = (e: string | null) => (e === null ? '' : `, e.g. ${JSON.stringify(e)}`);

/** The one decision every surface shows. Pure: the facts are gathered by the caller. */
export function judgeSync(facts: SyncFacts): SyncVerdict {
  const reasons: SyncReason[] = [];
  const add = (code: SyncReasonCode, message: string, needsYou = false) => reasons.push({ code, message, needsYou });

  // What needs the user first: waiting will not fix these.
  if (facts.stoppedLoop !== null) add('LOOP_STOPPED', `sync ${facts.stoppedLoop} stopped; restart the daemon to resume it`, true);
  if (facts.paused !== null) add('PAUSED', `paused: ${facts.paused}`, true);
  if (facts.localGuard !== null) {
    add(
      'LOCAL_GUARD',
      `held by this workstation's delete guard since ${facts.localGuard.since ?? 'it tripped'} (${files(facts.localGuard.missing)} missing here are not recorded as deleted, and nothing from the server is applied): restore the files, or record the deletions with \`strata guard reset\``,
      true,
    );
  }
  if (facts.heldIncoming !== null) {
    add(
      'HELD',
      `held by the incoming delete guard: the server's changes delete ${files(facts.heldIncoming.deletes)} of ${facts.heldIncoming.files} here; apply them with \`strata sync confirm\``,
      true,
    );
  }
  // A path in the way of another (a directory where the server has a file) can be cleared by sync
  // itself while it still works: the push of the files in it makes them conflict copies on the
  // server, and the directory then makes way (engine/commands/sync-make-way-above.ts). Said to need
  // the user only once nothing is in flight; `sync wait` stopped at the first look, mid-exchange,
  // with "could not be written here" (CI, model-sync-known).
  const settled = !facts.starting && facts.offline === null && facts.capturing === 0 && facts.notPushed === 0 && facts.serverAhead === false && !facts.diskBehind;
  if (facts.notOnDisk.count > 0) {
    const full = facts.notOnDisk.diskFull ?? 0;
    const why = full > 0 ? `disk full: ${files(full)} waiting for room here (tried again until they fit)${full < facts.notOnDisk.count ? `, and ${files(facts.notOnDisk.count - full)} more` : ''}` : `${files(facts.notOnDisk.count)} of the project could not be written here`;
    // A full disk needs the user at once, unless room came back and the retry is due (diskBehind).
    add('WRITE_FAILED', `${why}${example(facts.notOnDisk.example)}`, full > 0 ? !facts.diskBehind : settled);
  }
  if (facts.refused.count > 0) {
    // The server's cause, not just a count: "refused 1 version" alone left the user (and the model
    // test's report, seed 38006) with nothing to act on.
    const cause = facts.refused.reason == null ? '' : ` (the server said: ${facts.refused.reason})`;
    add('REFUSED', `the server refused ${versions(facts.refused.count)} made here${example(facts.refused.example)}${cause}; change or delete the file to try again`, true);
  }
  for (const [reason, count] of Object.entries(facts.skipped)) {
    if (count > 0) add('SKIPPED', `${versions(count)} from the server cannot be taken here (${reason})`, settled);
  }
  if (facts.unrepresentable.count > 0) {
    // The example is shown as is, not JSON-quoted: its bytes that are not UTF-8 are already `\xHH`
    // (engine/raw-names.ts), and quoting would double every backslash.
    const { count, example: shown } = facts.unrepresentable;
    add(
      'UNREPRESENTABLE',
      `name not representable: ${shown ?? 'a file here'} is neither versioned nor synced${count > 1 ? ` (and ${files(count - 1)} more; \`strata status\` lists them)` : ''}: rename it`,
      true,
    );
  }
  if (facts.readOnly && facts.notPushed > 0) {
    add('READ_ONLY', `the server does not accept changes from this workstation (read-only access): ${versions(facts.notPushed)} made here stay queued`, true);
  }

  // What sync is working on.
  if (facts.starting) add('STARTING', 'starting: the directory is looked at before anything is synced');
  if (facts.offline !== null) add('OFFLINE', `the server is unreachable (${facts.offline.message})${facts.offline.retryAt === null ? '' : `; retrying at ${facts.offline.retryAt}`}`);
  if (facts.capturing > 0) add('CAPTURING', `${facts.capturing} change${facts.capturing === 1 ? '' : 's'} here not versioned yet`);
  if (!facts.readOnly && facts.notPushed > 0) add('NOT_PUSHED', `${versions(facts.notPushed)} made here not on the server yet`);
  if (facts.serverAhead === true) add('NOT_PULLED', "the server has changes not applied here yet");
  else if (facts.serverAhead === null && facts.offline === null) add('PULL_UNCONFIRMED', "not yet confirmed with the server that nothing newer is there");
  if (facts.diskBehind) add('NOT_ON_DISK', "the project's latest changes are not all on disk yet");

  return { inSync: reasons.length === 0, reasons };
}
