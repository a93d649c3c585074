// The sync model's long run (issue 38): random sequences on three workstations (two watching, one a
// mounted clone) and one `strata serve`, with faults (test/model/sync.ts), for a given time.
// Reports sequences, operations, commands, faults, observation points, failures, sequences per
// minute and the load average; each failure is shrunk (within a budget) and printed with its seed,
// and the run goes on from the next seed, so one defect does not hide the others. One world (server,
// homes, daemons) serves every sequence; a failure's world is thrown away and a new one opened.
//
//   node dist/bench/sync-model.js [--minutes 20] [--steps 30] [--sequences 500] [--seed N]
//                                 [--workstations 3] [--no-mount] [--strict] [--shrink-budget 4] [--verbose]
// Result: bench/results/sync-model.json.

import { loadavg } from 'node:os';
import { emptyStats, STAT_KEYS } from '../test/model/sync.js';
import { runSyncModel } from '../test/model/sync-run.js';
import { WorldKeeper } from '../test/model/sync-world.js';
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
  const totals = { sequences: 0, ...emptyStats() };
  const worlds = new WorldKeeper({ workstations, mount });
  const loads: number[] = [];
  const sampler = setInterval(() => loads.push(loadavg()[0]!), 10_000);
  // Stopped early: the world's daemons, mount and small disk go with the run, not after it.
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      void worlds.discard().finally(() => process.exit(130));
    });
  }
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
      worlds,
      timeLimitMs: Math.max(1, deadline - Date.now()),
      shrinkBudget: Number(arg('shrink-budget', '4')),
      progress: (line: string) => process.stderr.write(`${new Date().toISOString().slice(11, 19)} ${line}\n`),
      ...(process.argv.includes('--verbose') ? { log: (line: string) => process.stderr.write(`${line}\n`) } : {}),
    });
    totals.sequences += report.sequences;
    for (const key of STAT_KEYS) totals[key] += report[key];
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
  clearInterval(sampler);
  await worlds.discard();
  const minutes = (Date.now() - startedAt) / 60_000;
  const load = loads.length === 0 ? loadavg()[0]! : loads.reduce((a, b) => a + b, 0) / loads.length;
  printTable(
    `sync model (${workstations} workstations${mount ? ', one mounted' : ''}, ≤ ${steps} steps)`,
    ['minutes', 'sequences', 'per minute', 'worlds opened', 'operations', 'commands', 'restores', 'faults', 'observations', 'inconclusive', 'conflict copies', 'file/dir left to user', 'snapshot lag', 'failures', 'per 1,000 ops', 'load avg'],
    [
      [
        minutes.toFixed(1),
        String(totals.sequences),
        (totals.sequences / minutes).toFixed(2),
        String(worlds.opened),
        String(totals.operations),
        String(totals.commands),
        String(totals.restores),
        String(totals.faults),
        String(totals.observations),
        String(totals.inconclusive),
        String(totals.conflicts),
        String(totals.unresolved),
        String(totals.snapshotLag),
        String(failures.length),
        totals.operations === 0 ? '-' : ((failures.length * 1000) / totals.operations).toFixed(2),
        load.toFixed(1),
      ],
    ],
  );
  for (const failure of failures) process.stdout.write(`\nseed ${failure.seed}: ${failure.first}\n`);
  writeResult('sync-model', { machine: machineInfo(), steps, workstations, mount, minutes, sequencesPerMinute: totals.sequences / minutes, worldsOpened: worlds.opened, worldOpenSeconds: worlds.openMs / 1000, loadAverage: load, ...totals, failures });
  if (failures.length > 0 && process.exitCode === undefined) process.exitCode = 1;
}

await main();
