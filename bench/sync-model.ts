// The sync model's long run (issue 38): random sequences on three workstations (two watching, one a
// mounted clone) and one `strata serve`, with faults (test/model/sync.ts), for a given time.
// Reports sequences, operations, faults, observation points and failures; each failure is shrunk
// (within a budget: a sequence costs about a minute of real processes) and printed with its seed,
// and the run goes on from the next seed, so one defect does not hide the others.
//
//   node dist/bench/sync-model.js [--minutes 20] [--steps 30] [--sequences 500] [--seed N]
//                                 [--workstations 3] [--no-mount] [--strict] [--shrink-budget 4] [--verbose]
// Result: bench/results/sync-model.json.

import { runSyncModel } from '../test/model/sync-run.js';
import { machineInfo, writeResult } from './lib/env.js';
import { printTable } from './lib/table.js';

const arg = (name: string, fallback: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return i === -1 ? fallback : process.argv[i + 1]!;
};

async function main(): Promise<void> {
  const sequences = Number(arg('sequences', '500'));
  const steps = Number(arg('steps', '30'));
  const workstations = Number(arg('workstations', '3'));
  const mount = !process.argv.includes('--no-mount');
  const startedAt = Date.now();
  const deadline = startedAt + Number(arg('minutes', '20')) * 60_000;
  let seed = Number(arg('seed', String(process.env['STRATA_MODEL_SEED'] ?? Date.now() % 1_000_000)));
  const totals = { sequences: 0, operations: 0, skipped: 0, faults: 0, observations: 0, inconclusive: 0, conflicts: 0, checked: 0, unresolved: 0 };
  const failures: Array<{ seed: number; first: string | null; report: string }> = [];
  let setupErrors = 0;
  while (totals.sequences < sequences && Date.now() < deadline) {
    const report = await runSyncModel({
      workstations,
      mount,
      // A file/directory conflict left for the user is counted, not a failure: it would end every
      // batch and hide the rest (it is reported as a finding of its own; --strict makes it fail).
      tolerateTypeConflicts: !process.argv.includes('--strict'),
      runs: sequences - totals.sequences,
      maxSteps: steps,
      seed,
      timeLimitMs: Math.max(1, deadline - Date.now()),
      shrinkBudget: Number(arg('shrink-budget', '4')),
      progress: (line: string) => process.stderr.write(`${new Date().toISOString().slice(11, 19)} ${line}\n`),
      ...(process.argv.includes('--verbose') ? { log: (line: string) => process.stderr.write(`${line}\n`) } : {}),
    });
    for (const key of Object.keys(totals) as Array<keyof typeof totals>) totals[key] += report[key];
    process.stderr.write(`seed ${seed}: ${report.sequences} sequence(s), ${report.operations} operation(s)${report.failed ? ', FAILED' : ''}\n`);
    if (report.failure !== null) {
      failures.push({ seed, first: report.firstDisagreement, report: report.failure });
      process.stderr.write(`${report.failure}\n`);
    }
    if (report.sequences === 0) break;
    // A world that cannot even be set up (a wrong Node on PATH: bootstrap failed at once) is not a
    // finding: three such batches in a row end the run instead of counting a failure a second.
    setupErrors = report.failed && report.operations === 0 && report.firstDisagreement?.startsWith('error:') === true ? setupErrors + 1 : 0;
    if (setupErrors >= 3) {
      process.stderr.write(`stopped: the world could not be set up three times in a row (${report.firstDisagreement})\n`);
      process.exitCode = 2;
      break;
    }
    seed += 1;
  }
  const minutes = (Date.now() - startedAt) / 60_000;
  printTable(
    `sync model (${workstations} workstations${mount ? ', one mounted' : ''}, ≤ ${steps} steps)`,
    ['minutes', 'sequences', 'operations', 'faults', 'observations', 'inconclusive', 'conflict copies', 'file/dir left to user', 'failures', 'per 1,000 ops'],
    [
      [
        minutes.toFixed(1),
        String(totals.sequences),
        String(totals.operations),
        String(totals.faults),
        String(totals.observations),
        String(totals.inconclusive),
        String(totals.conflicts),
        String(totals.unresolved),
        String(failures.length),
        totals.operations === 0 ? '-' : ((failures.length * 1000) / totals.operations).toFixed(2),
      ],
    ],
  );
  for (const failure of failures) process.stdout.write(`\nseed ${failure.seed}: ${failure.first}\n`);
  writeResult('sync-model', { machine: machineInfo(), steps, workstations, mount, minutes, ...totals, failures });
  if (failures.length > 0 && process.exitCode === undefined) process.exitCode = 1;
}

await main();
