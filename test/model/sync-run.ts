// Runs the sync model (sync.ts) under fast-check: seeded, shrinking, bounded in time, as run.ts runs
// the single-workstation one. Shared by the short run (test/model-sync.test.ts) and the long one
// (bench/sync-model.ts). A failure prints the seed, the replay path and the shrunk sequence:
//
//   STRATA_MODEL_SEED=123 [STRATA_MODEL_PATH=0:1:4] npx vitest run test/model-sync.test.ts
//   node dist/bench/sync-model.js --seed 123

import fc from 'fast-check';
import { failureReport } from './run.js';
import { emptyStats, runSyncSequence, STAT_KEYS, type SyncSequenceStats } from './sync.js';
import { type SyncStep, syncSequenceArbitrary } from './sync-steps.js';
import { WorldKeeper } from './sync-world.js';

export interface SyncModelRunOptions {
  workstations: number;
  mount: boolean;
  tolerateTypeConflicts?: boolean;
  runs: number;
  maxSteps: number;
  seed?: number;
  path?: string;
  /** start no new sequence after this long (shrinking included); the one under way finishes */
  timeLimitMs: number;
  /** sequences run while shrinking at most (each costs a minute of real processes) */
  shrinkBudget?: number;
  log?: (line: string) => void;
  progress?: (line: string) => void;
  examples?: SyncStep[][];
  /** the world to run in (kept across calls by the long run); a world of this run's own otherwise */
  worlds?: WorldKeeper;
}

export interface SyncModelRunReport extends SyncSequenceStats {
  seed: number;
  sequences: number;
  failed: boolean;
  failure: string | null;
  /** the shrunk sequence's first disagreement (to tell failures apart) */
  firstDisagreement: string | null;
  interrupted: boolean;
}

export async function runSyncModel(options: SyncModelRunOptions): Promise<SyncModelRunReport> {
  const seed = options.seed ?? (Date.now() ^ (Math.random() * 0x100000000)) >>> 0;
  const totals: SyncSequenceStats & { sequences: number } = { sequences: 0, ...emptyStats() };
  const worlds = options.worlds ?? new WorldKeeper({ workstations: options.workstations, mount: options.mount });
  const model = { workstations: options.workstations, mount: options.mount, tolerateTypeConflicts: options.tolerateTypeConflicts === true, worlds };
  let shrinking = false;
  let shrinkRuns = 0;
  let lastFailures: string[] = [];
  let outOfTime = false;
  const startedAt = Date.now();
  const property = fc.asyncProperty(syncSequenceArbitrary(options.workstations, options.maxSteps), async (steps) => {
    if (shrinking && ++shrinkRuns > (options.shrinkBudget ?? Number.POSITIVE_INFINITY)) return true;
    if (totals.sequences > 0 && Date.now() - startedAt > options.timeLimitMs) {
      outOfTime = true;
      return true;
    }
    const started = Date.now();
    const result = await runSyncSequence(steps, { ...model, ...(options.log === undefined ? {} : { log: options.log }) });
    options.progress?.(
      `sync ${shrinking ? `shrink ${shrinkRuns}` : `sequence ${totals.sequences + 1}`}: ${result.stats.operations} operation(s) (${result.stats.commands} command(s)), ${result.stats.faults} fault(s), ${result.stats.observations} observation(s), ${((Date.now() - started) / 1000).toFixed(1)} s, ${result.failures.length === 0 ? 'ok' : `FAILED: ${result.failures[0]!.split('\n')[0]}`}`,
    );
    if (!shrinking) {
      totals.sequences += 1;
      for (const key of STAT_KEYS) totals[key] += result.stats[key];
    }
    if (result.failures.length > 0) {
      shrinking = true;
      lastFailures = result.failures;
      return false;
    }
    return true;
  });
  const details = await fc
    .check(property, {
    seed,
    numRuns: options.runs,
    endOnFailure: false,
    ...(options.path === undefined ? {} : { path: options.path }),
    ...(options.examples === undefined ? {} : { examples: options.examples.map((steps) => [steps] as [SyncStep[]]) }),
    })
    .catch(async (error: unknown) => {
      if (options.worlds === undefined) await worlds.discard();
      throw error;
    });
  let failure: string | null = null;
  let firstDisagreement: string | null = null;
  if (details.failed && details.counterexample !== null) {
    const [steps] = details.counterexample;
    // Replayed once more for its own transcript and disagreements (timing may make it pass).
    const again = await runSyncSequence(steps, model);
    const report = failureReport('sync model', details, steps, again, lastFailures);
    firstDisagreement = report.disagreements[0]?.split('\n')[0] ?? null;
    failure = report.text;
  }
  if (options.worlds === undefined) await worlds.discard();
  return { seed, ...totals, failed: details.failed, failure, firstDisagreement, interrupted: outOfTime };
}
