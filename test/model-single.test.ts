// The single-workstation model (issue 38), short run: random sequences of file operations,
// snapshots, restores, tags, retention changes and `kill -9` of the daemon on one workstation in
// each capture mode, checked against the model once quiet (test/model/single.ts). Seeded and
// shrinking: a failure prints STRATA_MODEL_SEED (and STRATA_MODEL_PATH) to replay it. The long run
// is bench/model-single.ts.

import { describe, expect, it } from 'vitest';
import { runModel } from './model/run.js';
import type { CaptureMode } from './model/workstation.js';

// A fixed seed by default, so the suite runs the same sequences each time (timing still varies);
// STRATA_MODEL_SEED=random, or a number, to explore. The long run (bench/model-single.ts) explores.
const seedEnv = process.env['STRATA_MODEL_SEED'] ?? '38';
const seed = seedEnv === 'random' ? undefined : Number(seedEnv);
const path = process.env['STRATA_MODEL_PATH'];
const verbose = process.env['STRATA_MODEL_VERBOSE'] === '1';

describe('single-workstation model', () => {
  for (const mode of ['watch', 'mount'] as CaptureMode[]) {
    it(`${mode} mode: disk, model, history, snapshots and fsck agree after random sequences`, { timeout: 600_000 }, async () => {
      const report = await runModel({
        mode,
        runs: Number(process.env['STRATA_MODEL_RUNS'] ?? 3),
        maxSteps: 16,
        // No new sequence after this; the one under way finishes (a loaded 2-core machine runs one
        // in 20-90 s).
        timeLimitMs: Number(process.env['STRATA_MODEL_TIME_MS'] ?? 60_000),
        ...(seed === undefined ? {} : { seed }),
        ...(path === undefined ? {} : { path }),
        ...(verbose ? { log: (line: string) => process.stderr.write(`${line}\n`) } : {}),
      });
      process.stderr.write(`model ${mode}: seed ${report.seed}, ${report.sequences} sequence(s), ${report.operations} operation(s), ${report.faults} kill -9, ${report.restores} restore(s)\n`);
      expect(report.failure).toBeNull();
      expect(report.sequences).toBeGreaterThan(0);
    });
  }
});
