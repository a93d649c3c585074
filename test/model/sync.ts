// The sync model (issue 38): two or three workstations (watch mode; the third a mounted clone when
// asked) and one `strata serve` on loopback, real processes, kept across sequences (a project of
// its own each: sync-world.ts). A sequence of generated steps (sync-steps.ts) applies filesystem
// operations to random workstations' directories with ordinary syscalls and commands in them
// (snapshots, restores, tags, retention: sync-commands.ts), interleaved with faults (the server
// stopped or killed, a daemon killed, a workstation offline, a key refused, a disk full) and
// observation points. Nothing predicts which side of a race wins, so the checks are
// the properties every outcome must have:
//
// - truth, at each observation point: for every running workstation whose `sync wait` exits 0 while
//   the server's head stays the same from before the first wait to after the last, its directory is
//   that head (a change of the head meanwhile makes the observation inconclusive, counted); with the
//   server down, or the workstation's key refused, `sync wait` never exits 0; a non-zero exit says
//   why; `inSync: false` has a reason;
// - after the sequence, once everything is back up: convergence (`sync wait` exits 0 everywhere and
//   every directory and every workstation's engine equal the server's head — names, bytes, exec
//   bits, link targets; conflict copies are allowed, named `x (conflict wsB …)`), no loss (every
//   content a workstation versioned is in some version on the server — with a retention limit set
//   in the sequence, pruning drops old versions by design, so only each path's current version is
//   checked), every snapshot and tag on every workstation as on the server, and `strata fsck` clean
//   on every home and on the server.
//
// The directory a step acts on is read first (modelFromDisk): operations pick existing paths there,
// and the model of fs-ops.ts refuses what the filesystem would. A step that races the daemon
// (ENOENT: the directory was just replaced by an incoming change) is skipped and said so.

import { applyFsOp } from './fs-ops.js';
import { diskFiles, fsckFailures, headFiles, lossFailures, modelFromDisk, namingFailures, reasonFailures, sameTree, snapshotFailures, syncStatusOf } from './sync-checks.js';
import { type CommandAction, COMMAND_OPS, runCommand } from './sync-commands.js';
import { explainPaths } from './sync-explain.js';
import { describeSyncStep, type SyncStep } from './sync-steps.js';
import type { Station, SyncModelWorld, WorldKeeper } from './sync-world.js';
import { differingPaths, diffTrees, type Tree } from './tree.js';

export interface SyncModelOptions {
  workstations: number;
  mount: boolean;
  /** a file/directory conflict left for the user is counted (`unresolved`), not a failure */
  tolerateTypeConflicts?: boolean;
  log?: (line: string) => void;
  /** the world the sequence runs in (kept across sequences; thrown away after a failure) */
  worlds: WorldKeeper;
}

export interface SyncSequenceStats {
  operations: number;
  skipped: number;
  /** snapshot, restore, tag, untag, retention commands run */
  commands: number;
  /** of which restores (snapshot or file) */
  restores: number;
  faults: number;
  observations: number;
  /** observations where the head moved during the waits: nothing could be concluded */
  inconclusive: number;
  /** conflict copies on the server at the end */
  conflicts: number;
  /** sequences whose end checks all ran (convergence, no loss, fsck) */
  checked: number;
  /** sequences that ended with a file/directory conflict left for the user (tolerated) */
  unresolved: number;
  /** sequences where a snapshot or tag reached a workstation only after `sync wait` had said in sync */
  snapshotLag: number;
}

export interface SyncSequenceResult {
  failures: string[];
  stats: SyncSequenceStats;
  transcript: string[];
}

// ELOOP: a link pulled in between the step's read of the disk and its write can make a loop
// (`ln -s b/a a/b` elsewhere, then `echo x > a/b` here): any filesystem refuses that write so
// (sync model seed 47001 path 21).
const RACED = new Set(['ENOENT', 'ENOTDIR', 'EISDIR', 'ENOTEMPTY', 'EEXIST', 'ELOOP']);

export const emptyStats = (): SyncSequenceStats => ({
  operations: 0,
  skipped: 0,
  commands: 0,
  restores: 0,
  faults: 0,
  observations: 0,
  inconclusive: 0,
  conflicts: 0,
  checked: 0,
  unresolved: 0,
  snapshotLag: 0,
});
export const STAT_KEYS = Object.keys(emptyStats()) as Array<keyof SyncSequenceStats>;
/** How long an observation's `sync wait` waits (the server up; down, it must not say 0 at all). */
const OBSERVE_TIMEOUT_S = 20;
const CONVERGE_TIMEOUT_S = 120;

export async function runSyncSequence(steps: SyncStep[], options: SyncModelOptions): Promise<SyncSequenceResult> {
  const stats = emptyStats();
  const failures: string[] = [];
  const transcript: string[] = [];
  const log = options.log ?? (() => undefined);
  let world: SyncModelWorld | null = null;
  /** a retention limit was set: old versions may be pruned by design */
  let limited = false;
  try {
    const opened = Date.now();
    world = await options.worlds.get();
    await world.newProject();
    const w = world;
    log(`  project ${w.sequences} up in ${((Date.now() - opened) / 1000).toFixed(1)} s`);
    for (const [index, step] of steps.entries()) {
      if (failures.length > 0) break;
      if (step.gap > 0) await new Promise((resolve) => setTimeout(resolve, step.gap));
      const { action } = step;
      let line: string | null = describeSyncStep(step);
      switch (action.op) {
        case 'fs': {
          const station = w.stations[action.ws % w.stations.length]!;
          // An unmounted mount point is an ordinary empty directory: nothing a user would write to.
          if (station.ws.mode === 'mount' && !station.ws.running) {
            line = null;
            break;
          }
          try {
            const did = await applyFsOp(station.ws.dir, await modelFromDisk(station.ws.dir), action.fs);
            line = did === null ? null : `${station.name}: ${did}`;
          } catch (error) {
            const code = (error as NodeJS.ErrnoException).code;
            // A full disk refuses the write as it would a user's (what did land stays).
            const full = code === 'ENOSPC' && station.full;
            if (code === undefined || !(RACED.has(code) || full)) throw error;
            line = null;
            transcript.push(`# ${full ? 'disk full' : 'raced the daemon'} (${code}): ${describeSyncStep(step)}`);
          }
          break;
        }
        case 'snapshot':
        case 'restoreSnapshot':
        case 'restoreVersion':
        case 'tag':
        case 'untag':
        case 'retention': {
          const station = w.stations[action.ws % w.stations.length]!;
          // A command goes through the workstation's daemon, in its directory (a mount's while mounted).
          if (!station.ws.running) {
            line = null;
            break;
          }
          const done = await runCommand(station, action as CommandAction);
          line = done.line;
          if (line !== null) {
            stats.commands += 1;
            stats.restores += done.restore ? 1 : 0;
            if (action.op === 'retention' && action.keep > 0) limited = true;
          }
          failures.push(...done.failures.map((f) => `step ${index + 1}: ${f}`));
          break;
        }
        case 'refuseKey': {
          const station = w.stations[action.ws % w.stations.length]!;
          if (!w.serverUp || station.refused) line = null;
          else {
            await w.refuseKey(station);
            stats.faults += 1;
          }
          break;
        }
        case 'restoreKey': {
          const station = w.stations[action.ws % w.stations.length]!;
          if (!w.serverUp || !station.refused) line = null;
          else await w.restoreKey(station);
          break;
        }
        case 'diskFull': {
          const station = w.stations.find((s) => s.disk !== null);
          if (station === undefined || station.full) line = null;
          else {
            await w.fillDisk(station);
            stats.faults += 1;
          }
          break;
        }
        case 'diskFree': {
          const station = w.stations.find((s) => s.disk !== null);
          if (station === undefined || !station.full) line = null;
          else await w.freeDisk(station);
          break;
        }
        case 'serverDown':
          if (!w.serverUp) line = null;
          else {
            await w.stopServer(action.kill ? 'SIGKILL' : 'SIGTERM');
            stats.faults += 1;
          }
          break;
        case 'serverUp':
          if (w.serverUp) line = null;
          else await w.startServer();
          break;
        case 'kill9': {
          const station = w.stations[action.ws % w.stations.length]!;
          if (!station.ws.running) line = null;
          else {
            await station.ws.kill9();
            stats.faults += 1;
            // A mount killed is a dead mount point until the next start: it restarts at once.
            if (action.restart || station.ws.mode === 'mount') await station.ws.start();
          }
          break;
        }
        case 'offline': {
          const station = w.stations[action.ws % w.stations.length]!;
          if (!station.ws.running) line = null;
          else {
            await station.ws.stop();
            stats.faults += 1;
          }
          break;
        }
        case 'online': {
          const station = w.stations[action.ws % w.stations.length]!;
          if (station.ws.running) line = null;
          else await station.ws.start();
          break;
        }
        case 'observe': {
          const observed = await observe(w, stats);
          if (observed === null) line = null;
          else {
            line = `${describeSyncStep(step)}  # ${observed.summary}`;
            failures.push(...observed.failures.map((f) => `step ${index + 1} (observe): ${f}`));
          }
          break;
        }
      }
      if (line === null) {
        stats.skipped += 1;
        if (action.op !== 'fs' || transcript.at(-1)?.startsWith('# raced') !== true) transcript.push(`# skipped: ${describeSyncStep(step)}`);
      } else {
        stats.operations += action.op === 'fs' || COMMAND_OPS.has(action.op) ? 1 : 0;
        transcript.push(line);
      }
      log(`  ${index + 1}. ${transcript.at(-1)}`);
    }
    if (failures.length === 0) {
      const checking = Date.now();
      failures.push(...(await checkConverged(w, stats, log, options.tolerateTypeConflicts === true, limited)));
      log(`  end checks in ${((Date.now() - checking) / 1000).toFixed(1)} s`);
    }
  } catch (error) {
    failures.push(`error: ${(error as Error).stack ?? String(error)}`);
  } finally {
    if (failures.length > 0 && world !== null) {
      for (const station of world.stations) {
        const status = station.ws.running ? await syncStatusOf(world, station).catch(() => null) : null;
        if (status !== null) failures.push(`${station.name} at the end: inSync ${status.inSync}, state ${status.state}, reasons ${JSON.stringify(status.reasons)}`);
        // The daemon's last warnings and errors (pino levels 40, 50) name the cause a reason only
        // counts ("1 file … could not be written here"), in the report of a run that is not replayed.
        const warned = station.ws.log().split('\n').filter((line) => /"level":(40|50)/.test(line)).slice(-6);
        if (warned.length > 0) failures.push(`${station.name}'s last warnings:\n    ${warned.map((line) => line.slice(0, 400)).join('\n    ')}`);
      }
      for (const station of world.stations) log(`--- ${station.name}'s daemon log (tail):\n${station.ws.log().slice(-3000)}`);
    }
    // A failed sequence's world is not trusted with the next one.
    if (failures.length > 0) await options.worlds.discard();
  }
  return { failures, stats, transcript };
}

/**
 * An observation point: `sync wait` on every running workstation in turn, with the server's head
 * read before the first and after the last. Null: nothing running to observe.
 */
async function observe(world: SyncModelWorld, stats: SyncSequenceStats): Promise<{ failures: string[]; summary: string } | null> {
  const running = world.stations.filter((s) => s.ws.running);
  if (running.length === 0) return null;
  stats.observations += 1;
  const failures: string[] = [];
  const serverUp = world.serverUp;
  const before = serverUp ? await headFiles(world.server) : null;
  const waits: Array<{ station: Station; code: number | null; stderr: string }> = [];
  for (const station of running) {
    const timeout = serverUp ? OBSERVE_TIMEOUT_S : 2;
    const result = await world.cli(station, ['sync', 'wait', '--timeout', String(timeout)], (timeout + 60) * 1000);
    waits.push({ station, code: result.code, stderr: result.stderr });
    if (result.code !== 0 && result.stderr.trim() === '') failures.push(`${station.name}: sync wait exited ${result.code} and said nothing`);
    if (result.code === 0 && station.refused) failures.push(`truth: ${station.name}'s sync wait exited 0 while the server refused its key`);
    failures.push(...reasonFailures(station, await syncStatusOf(world, station)));
  }
  const after = serverUp ? await headFiles(world.server) : null;
  const steady = before !== null && after !== null && sameTree(before, after);
  for (const wait of waits) {
    if (wait.code !== 0) continue;
    if (!serverUp) failures.push(`${wait.station.name}: sync wait exited 0 while the server was down`);
    else if (steady) {
      const disk = await diskFiles(wait.station);
      failures.push(...diffTrees(disk, after!, { actual: 'disk', expected: "the server's head" }).map((d) => `truth: ${wait.station.name}'s sync wait exited 0, but ${d}`));
    }
  }
  const inSync = waits.filter((w) => w.code === 0).length;
  if (serverUp && !steady && inSync > 0) stats.inconclusive += 1;
  const codes = waits.map((w) => `${w.station.name} ${w.code}${w.code === 0 ? '' : ` (${firstLine(w.stderr)})`}`).join(', ');
  return { failures, summary: `${codes}${serverUp && !steady ? '; head moved' : ''}` };
}

const firstLine = (text: string) => text.trim().split('\n')[0]!.slice(0, 160);

/**
 * A file on one side and a directory on the other (`a` and `a/a`): the server refuses the version
 * that would put a path below a file, and the other side skips the one it cannot take; both say so
 * and wait for the user. Not a conflict copy — so not convergence — but no lie either: with
 * `tolerateTypeConflicts` the sequence counts it (`unresolved`) and checks the rest.
 */
const TYPE_CONFLICT = /cannot be created below it|is a file, so|is a directory/;

/** Everything back up, `sync wait` everywhere until a round leaves the head as it was, then the end checks. */
async function checkConverged(world: SyncModelWorld, stats: SyncSequenceStats, log: (line: string) => void, tolerate: boolean, limited: boolean): Promise<string[]> {
  await world.recover();
  let head: Tree | null = null;
  const blocked = new Set<Station>();
  for (let round = 1; round <= 4 && head === null; round++) {
    const before = await headFiles(world.server);
    for (const station of world.stations) {
      if (blocked.has(station)) continue;
      const started = Date.now();
      const result = await world.cli(station, ['sync', 'wait', '--timeout', String(CONVERGE_TIMEOUT_S)], (CONVERGE_TIMEOUT_S + 60) * 1000);
      log(`  converge round ${round}: ${station.name} sync wait exit ${result.code} in ${((Date.now() - started) / 1000).toFixed(1)} s`);
      if (result.code === 0) continue;
      const reasons = (await syncStatusOf(world, station)).reasons;
      const typeConflict = result.code === 4 && reasons.length > 0 && reasons.every((r) => (r.code === 'REFUSED' || r.code === 'SKIPPED') && TYPE_CONFLICT.test(r.message));
      if (tolerate && typeConflict) {
        blocked.add(station);
        log(`  ${station.name} waits for the user (file/directory conflict): ${reasons.map((r) => r.message).join('; ')}`);
        continue;
      }
      return [`convergence: ${station.name}'s sync wait exited ${result.code} after everything was back up: ${result.stderr.trim()}`, ...(await describeTrees(world))];
    }
    const after = await headFiles(world.server);
    if (sameTree(before, after)) head = after;
  }
  if (head === null) return ["convergence: the server's head still changed after 4 rounds of sync wait on every workstation"];
  const failures: string[] = [];
  // A workstation waiting for the user keeps its side of the file/directory conflict: the others are compared.
  const compared = world.stations.filter((s) => !blocked.has(s));
  stats.unresolved = blocked.size > 0 ? 1 : 0;
  for (const station of compared) {
    const disk = await diskFiles(station);
    failures.push(...diffTrees(disk, head, { actual: 'disk', expected: "the server's head" }).map((d) => `convergence: ${station.name}: ${d}`));
    const engine = await headFiles(station.ws);
    failures.push(...diffTrees(engine, head, { actual: 'its engine', expected: "the server's head" }).map((d) => `convergence: ${station.name}: ${d}`));
    const differ = [...new Set([...differingPaths(disk, head), ...differingPaths(engine, head)])];
    if (differ.length > 0) failures.push(...(await explainPaths(station, differ)));
  }
  for (const station of world.stations) failures.push(...reasonFailures(station, await syncStatusOf(world, station)));
  log(`  trees compared`);
  stats.conflicts = [...head.keys()].filter((path) => path.includes('(conflict ')).length;
  failures.push(...namingFailures(head));
  failures.push(...(await lossFailures(world, compared, { currentOnly: limited })));
  const snapshots = await snapshotFailures(world, compared);
  failures.push(...snapshots.failures);
  stats.snapshotLag = snapshots.late ? 1 : 0;
  failures.push(...(await fsckFailures(world)));
  stats.checked = 1;
  return failures;
}

/** The server's head and how each workstation differs from it (for a failure's report). */
async function describeTrees(world: SyncModelWorld): Promise<string[]> {
  const head = await headFiles(world.server);
  const lines = [`the server's head: ${[...head].map(([path, node]) => `${path}${node.type === 'link' ? ` -> ${node.target}` : ` (${node.type === 'file' ? node.size : 0} B)`}`).join(', ')}`];
  for (const station of world.stations) {
    const disk = await diskFiles(station);
    const diff = diffTrees(disk, head, { actual: 'disk', expected: 'the head' });
    lines.push(`${station.name}: ${diff.length === 0 ? 'disk = the head' : diff.join('; ')}`);
    if (diff.length > 0) lines.push(...(await explainPaths(station, differingPaths(disk, head))));
  }
  return lines;
}
