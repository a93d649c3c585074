// The single-workstation model's long run (issue 38): hundreds of random sequences per capture mode
// (test/model/single.ts: file operations, snapshots, restores, tags, retention, kill -9 of the
// daemon; checked against the model once quiet), reporting sequences, operations, faults and
// failures per 1,000 operations. Each failure is shrunk and printed with its seed; the run goes on
// with the next seed, so one defect does not hide the others.
//
//   node dist/bench/model-single.js [--mode watch|mount|both] [--sequences 200] [--steps 40]
//                                   [--minutes 60] [--seed N] [--shrink-budget 15] [--verbose]
// Result: bench/results/model-single.json.

import { mkdir } from 'node:fs/promises';
import { runModel } from '../test/model/run.js';
import type { CaptureMode } from '../test/model/workstation.js';
import { BENCH_TMP, machineInfo, writeResult } from './lib/env.js';
import { printTable } from './lib/table.js';

const arg = (name: string, fallback: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return i === -1 ? fallback : process.argv[i + 1]!;
};

interface ModeResult {
  mode: CaptureMode;
  sequences: number;
  operations: number;
  faults: number;
  restores: number;
  failures: number;
  reports: string[];
}

async function main(): Promise<void> {
  const modes: CaptureMode[] = arg('mode', 'both') === 'both' ? ['watch', 'mount'] : [arg('mode', 'watch') as CaptureMode];
  const sequences = Number(arg('sequences', '200'));
  const steps = Number(arg('steps', '40'));
  const deadline = Date.now() + Number(arg('minutes', '60')) * 60_000;
  let seed = Number(arg('seed', String(process.env['STRATA_MODEL_SEED'] ?? Date.now() % 1_000_000)));
  process.env['STRATA_MODEL_TMP'] = BENCH_TMP;
  await mkdir(BENCH_TMP, { recursive: true });
  const results: ModeResult[] = [];
  for (const [index, mode] of modes.entries()) {
    const result: ModeResult = { mode, sequences: 0, operations: 0, faults: 0, restores: 0, failures: 0, reports: [] };
    results.push(result);
    // Each mode gets its share of the time left.
    const modeDeadline = Date.now() + (deadline - Date.now()) / (modes.length - index);
    while (result.sequences < sequences && Date.now() < modeDeadline) {
      // One fast-check run per batch of sequences: a failure ends the batch (after shrinking), and
      // the next batch starts from the next seed.
      const report = await runModel({
        mode,
        runs: sequences - result.sequences,
        maxSteps: steps,
        seed,
        timeLimitMs: Math.max(1, modeDeadline - Date.now()),
        shrinkBudget: Number(arg('shrink-budget', '15')),
        progress: (line: string) => process.stderr.write(`${line}\n`),
        ...(process.argv.includes('--verbose') ? { log: (line: string) => process.stderr.write(`${line}\n`) } : {}),
      });
      result.sequences += report.sequences;
      result.operations += report.operations;
      result.faults += report.faults;
      result.restores += report.restores;
      process.stderr.write(`${mode}: seed ${seed}: ${report.sequences} sequence(s), ${report.operations} operation(s)${report.failed ? ', FAILED' : ''}\n`);
      if (report.failure !== null) {
        result.failures += 1;
        result.reports.push(report.failure);
        process.stderr.write(`${report.failure}\n`);
      }
      if (report.sequences === 0) break;
      seed += 1;
    }
  }
  printTable(
    'single-workstation model',
    ['mode', 'sequences', 'operations', 'kill -9', 'restores', 'failures', 'per 1,000 ops'],
    results.map((r) => [r.mode, String(r.sequences), String(r.operations), String(r.faults), String(r.restores), String(r.failures), r.operations === 0 ? '-' : ((r.failures * 1000) / r.operations).toFixed(2)]),
  );
  writeResult('model-single', { machine: machineInfo(), steps, results });
  if (results.some((r) => r.failures > 0)) process.exitCode = 1;
}

await main();
