// Runs the single-workstation model under fast-check: seeded, shrinking, bounded in time. Shared by
// the short run in the test suite (test/model-single.test.ts) and the long one
// (bench/model-single.ts). A failure prints the seed, the replay path and the shrunk sequence:
//
//   STRATA_MODEL_SEED=123 [STRATA_MODEL_PATH=0:1:4] npx vitest run test/model-single.test.ts
//   STRATA_MODEL_SEED=123 node dist/bench/model-single.js --mode watch

import fc from 'fast-check';
import { runSequence, type SequenceStats, type Step, sequenceArbitrary } from './single.js';
import type { CaptureMode } from './workstation.js';

export interface ModelRunOptions {
  mode: CaptureMode;
  /** sequences to try (before shrinking) */
  runs: number;
  /** steps per sequence at most */
  maxSteps: number;
  seed?: number;
  /** fast-check's replay path of a failure (with its seed) */
  path?: string;
  /**
   * Start no new sequence after this long (shrinking included). A sequence under way always runs to
   * its end: fast-check's own time limit abandoned the running one, whose daemon (and mount) then
   * lived on unchecked, and on a loaded machine no sequence finished at all.
   */
  timeLimitMs: number;
  /** every line of every sequence, as it runs */
  log?: (line: string) => void;
  /** one line per sequence run (shrinking included) */
  progress?: (line: string) => void;
  /**
   * Sequences run while shrinking a failure at most; past it every candidate counts as passing, so
   * shrinking ends with the smallest failure found so far (each run costs seconds of real processes).
   */
  shrinkBudget?: number;
  /** fixed sequences tried first (failing seeds kept as examples) */
  examples?: Step[][];
}

export interface ModelRunReport {
  mode: CaptureMode;
  seed: number;
  sequences: number;
  operations: number;
  skipped: number;
  faults: number;
  restores: number;
  /** sequences that failed, before shrinking (the first stops the run) */
  failed: boolean;
  /** the report of the failure: seed, path, shrunk steps and what disagreed */
  failure: string | null;
  interrupted: boolean;
}

export async function runModel(options: ModelRunOptions): Promise<ModelRunReport> {
  const seed = options.seed ?? (Date.now() ^ (Math.random() * 0x100000000)) >>> 0;
  const totals: SequenceStats & { sequences: number } = { sequences: 0, operations: 0, skipped: 0, faults: 0, restores: 0 };
  let shrinking = false;
  let lastFailures: string[] = [];
  let shrinkRuns = 0;
  const startedAt = Date.now();
  let outOfTime = false;
  const property = fc.asyncProperty(sequenceArbitrary(options.maxSteps), async (steps) => {
    if (shrinking && ++shrinkRuns > (options.shrinkBudget ?? Number.POSITIVE_INFINITY)) return true;
    // Out of time: what is left passes unrun (the first sequence always runs).
    if (totals.sequences > 0 && Date.now() - startedAt > options.timeLimitMs) {
      outOfTime = true;
      return true;
    }
    const started = Date.now();
    const result = await runSequence(options.mode, steps, options.log === undefined ? {} : { log: options.log });
    options.progress?.(
      `${options.mode} ${shrinking ? `shrink ${shrinkRuns}` : `sequence ${totals.sequences + 1}`}: ${result.stats.operations} operation(s), ${((Date.now() - started) / 1000).toFixed(1)} s, ${result.failures.length === 0 ? 'ok' : `FAILED: ${result.failures[0]!.split('\n')[0]}`}`,
    );
    if (!shrinking) {
      totals.sequences += 1;
      totals.operations += result.stats.operations;
      totals.skipped += result.stats.skipped;
      totals.faults += result.stats.faults;
      totals.restores += result.stats.restores;
    }
    if (result.failures.length > 0) {
      shrinking = true;
      lastFailures = result.failures;
      options.log?.(`FAILED (${result.failures.length} disagreement(s)); shrinking`);
      return false;
    }
    return true;
  });
  const details = await fc.check(property, {
    seed,
    numRuns: options.runs,
    endOnFailure: false,
    ...(options.path === undefined ? {} : { path: options.path }),
    ...(options.examples === undefined ? {} : { examples: options.examples.map((steps) => [steps] as [Step[]]) }),
  });
  let failure: string | null = null;
  if (details.failed && details.counterexample !== null) {
    const [steps] = details.counterexample;
    // The last failing run is the shrunk one; replay it once more for its own disagreements.
    const again = await runSequence(options.mode, steps);
    failure = failureReport(`model (${options.mode})`, details, steps, again, lastFailures).text;
  }
  return { mode: options.mode, seed, ...totals, failed: details.failed, failure, interrupted: outOfTime };
}

/**
 * What a failed model run prints: the seed and path that reproduce it, the shrunk sequence as the
 * replay `again` ran it, and the disagreements (the replay's, or the last failing run's when the
 * replay passed).
 */
export function failureReport(
  model: string,
  details: { seed: number; counterexamplePath: string | null; numShrinks: number },
  steps: unknown[],
  again: { failures: string[]; transcript: string[] },
  lastFailures: string[],
): { text: string; disagreements: string[] } {
  const disagreements = again.failures.length > 0 ? again.failures : lastFailures;
  const text = [
    `${model} failed: STRATA_MODEL_SEED=${details.seed} STRATA_MODEL_PATH=${details.counterexamplePath ?? ''}`,
    `shrunk ${details.numShrinks} time(s) to ${steps.length} step(s)${again.failures.length === 0 ? ' (this replay passed: the failure depends on timing)' : ''}; as run:`,
    ...again.transcript.map((line, i) => `  ${i + 1}. ${line}`),
    `as data: ${JSON.stringify(steps)}`,
    'disagreements:',
    ...disagreements.map((line) => `  ${line}`),
  ].join('\n');
  return { text, disagreements };
}
