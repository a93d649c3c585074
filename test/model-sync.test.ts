// The sync model (issue 38), short run: random sequences of file operations on three workstations
// (two watching, one a mounted clone) and one `strata serve` — kept across sequences, a project of
// its own each — with snapshots, restores, tags and retention changes, interleaved with faults (the
// server stopped or killed, a daemon killed, a workstation offline, a key refused, a disk full) and
// observation points, checked for truth, convergence, no loss, snapshots and tags everywhere, and
// fsck (test/model/sync.ts). Seeded
// and shrinking: a failure prints STRATA_MODEL_SEED (and STRATA_MODEL_PATH) to replay it (with
// STRATA_MODEL_STEPS=30 for the long run's);
// STRATA_MODEL_SEED=random explores. The long run is bench/sync-model.ts.

import { describe, expect, it } from 'vitest';
import { runSyncModel } from './model/sync-run.js';

const seedEnv = process.env['STRATA_MODEL_SEED'] ?? '3801';
const seed = seedEnv === 'random' ? undefined : Number(seedEnv);
const path = process.env['STRATA_MODEL_PATH'];
const verbose = process.env['STRATA_MODEL_VERBOSE'] === '1';

describe('sync model', () => {
  it('three workstations and a server converge, lose nothing, say "in sync" only when it is, and fsck clean', { timeout: 300_000 }, async () => {
    const report = await runSyncModel({
      workstations: 3,
      mount: true,
      runs: Number(process.env['STRATA_MODEL_RUNS'] ?? 4),
      // STRATA_MODEL_STEPS: a path printed by the long run (30 steps) replays with its own length.
      maxSteps: Number(process.env['STRATA_MODEL_STEPS'] ?? 14),
      // No new sequence after this; the one under way finishes (the world's setup and a sequence take
      // 20-60 s each on a loaded 2-core machine).
      timeLimitMs: Number(process.env['STRATA_MODEL_TIME_MS'] ?? 90_000),
      // A failure here is reported with its seed, not shrunk at length: the long run shrinks.
      shrinkBudget: 3,
      ...(seed === undefined ? {} : { seed }),
      ...(path === undefined ? {} : { path }),
      ...(verbose ? { log: (line: string) => process.stderr.write(`${line}\n`) } : {}),
      progress: (line: string) => process.stderr.write(`${line}\n`),
    });
    process.stderr.write(
      `model sync: seed ${report.seed}, ${report.sequences} sequence(s), ${report.operations} operation(s) (${report.commands} command(s), ${report.restores} restore(s)), ${report.faults} fault(s), ${report.observations} observation(s) (${report.inconclusive} inconclusive), ${report.conflicts} conflict cop(ies)\n`,
    );
    expect(report.failure).toBeNull();
    expect(report.sequences).toBeGreaterThan(0);
    expect(report.operations).toBeGreaterThan(0);
    // The end checks (convergence, no loss, fsck) ran to their end on every sequence that passed.
    expect(report.checked).toBe(report.sequences);
  });
});
