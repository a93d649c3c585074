// Benchmark 2: 20,000 small files (1–4 KB, deterministic pseudo-random bytes), each a durable version.
// Peer in the same run: the same files written into a git work tree, then `git add -A && git commit`
// (default git, which does not fsync loose objects, and git with core.fsync=added). Strata: in this
// process with ~256 writes in flight, and over HTTP with 64 concurrent keep-alive requests.
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { BENCH_TMP, emptyTrash, freshDir, machineInfo, selected, trash, writeResult } from './lib/env.js';
import { git } from './lib/git.js';
import { writePath } from './lib/http.js';
import { pseudoRandomBytes, runPool } from './lib/pool.js';
import { settleDisk, timed } from './lib/proc.js';
import { mapSummary, pairedSpeedup, round3, type Summary, summarize, target } from './lib/stats.js';
import { BENCH_ACTOR, httpUnavailable, openBenchEngine, startHttpTarget } from './lib/strata.js';
import { printTable, printTargets, spread } from './lib/table.js';

const COUNT = Number(process.env['BENCH_SMALL_FILES'] ?? 20_000);
const ROUNDS = Number(process.env['BENCH_ROUNDS'] ?? 3);
const IN_PROCESS_IN_FLIGHT = 256;
const HTTP_CONCURRENCY = 64;

const files = Array.from({ length: COUNT }, (_, i) => {
  const size = 1024 + (Math.imul(i + 1, 2654435761) >>> 0) % 3073; // 1,024–4,096 bytes
  return { path: `src/d${String(i % 100).padStart(2, '0')}/file-${i}.txt`, content: pseudoRandomBytes(i + 1, size) };
});
const TOTAL_BYTES = files.reduce((sum, f) => sum + f.content.length, 0);

type Variant = 'git add+commit' | 'git add+commit (fsync)' | 'strata in-process' | 'strata HTTP';

interface Trial {
  /** the measured time: add+commit for git, all writes acknowledged for Strata */
  seconds: number;
  /** git only: writing the files into the work tree */
  treeSeconds?: number;
}

async function gitTrial(durable: boolean): Promise<Trial> {
  const repo = freshDir('small-git');
  await git(repo, ['init', '-q']);
  await settleDisk();
  const treeSeconds = await timed(async () => {
    for (const f of files) {
      const abs = join(repo, f.path);
      mkdirSync(dirname(abs), { recursive: true });
      writeFileSync(abs, f.content);
    }
  });
  await settleDisk();
  const seconds = await timed(async () => {
    await git(repo, ['add', '-A'], { durable });
    await git(repo, ['commit', '-q', '-m', 'x'], { durable });
  });
  trash(repo);
  return { seconds, treeSeconds };
}

async function strataInProcessTrial(): Promise<Trial> {
  const home = freshDir('small-strata-home');
  const { local, projectId } = await openBenchEngine(home);
  await settleDisk();
  const seconds = await timed(() =>
    runPool(COUNT, IN_PROCESS_IN_FLIGHT, async (i) => {
      const f = files[i]!;
      const { version } = await local.engine.writeFile({ projectId, path: f.path, actor: BENCH_ACTOR, content: f.content });
      if (version.size !== f.content.length) throw new Error(`${f.path}: stored ${version.size} bytes`);
    }),
  );
  await local.close();
  trash(home);
  return { seconds };
}

async function strataHttpTrial(): Promise<Trial> {
  const home = freshDir('small-strata-http-home');
  const target = await startHttpTarget(home, HTTP_CONCURRENCY);
  try {
    await settleDisk();
    const seconds = await timed(() =>
      runPool(COUNT, HTTP_CONCURRENCY, async (i) => {
        const f = files[i]!;
        const { version } = await target.client.json<{ version: { size: number } }>('PUT', writePath(target.projectId, f.path), f.content);
        if (version.size !== f.content.length) throw new Error(`${f.path}: stored ${version.size} bytes`);
      }),
    );
    return { seconds };
  } finally {
    await target.close();
    trash(home);
  }
}

async function main(): Promise<void> {
  const machine = machineInfo();
  console.log(`small-writes: ${COUNT} files of 1–4 KB (${(TOTAL_BYTES / 1e6).toFixed(1)} MB), ${ROUNDS} rounds, scratch ${BENCH_TMP}`);
  const httpReason = httpUnavailable();
  const trials: Record<Variant, (() => Promise<Trial>) | null> = {
    'git add+commit': () => gitTrial(false),
    'git add+commit (fsync)': () => gitTrial(true),
    'strata in-process': strataInProcessTrial,
    'strata HTTP': httpReason === null ? strataHttpTrial : null,
  };
  const variants = Object.keys(trials) as Variant[];
  const samples = new Map<Variant, Trial[]>(variants.map((v) => [v, []]));
  for (let round = 0; round < ROUNDS; round++) {
    const order = variants.map((_, i) => variants[(i + round) % variants.length]!);
    for (const variant of order) {
      const trial = trials[variant];
      if (trial === null || !selected(variant)) continue;
      const result = await trial();
      samples.get(variant)!.push(result);
      const tree = result.treeSeconds === undefined ? '' : ` (+ ${result.treeSeconds.toFixed(2)} s writing the work tree)`;
      console.log(`  round ${round + 1} ${variant}: ${result.seconds.toFixed(2)} s${tree}, ${(COUNT / result.seconds).toFixed(0)} versions/s`);
    }
  }

  emptyTrash();
  const rate = (v: Variant) => {
    const trials = samples.get(v)!;
    return trials.length === 0 ? Number.NaN : mapSummary(summarize(trials.map((t) => t.seconds)), (s) => COUNT / s).median;
  };
  const rows = [...samples].filter(([, t]) => t.length > 0).map(([variant, trials]) => {
    const seconds = summarize(trials.map((t) => t.seconds));
    const perSecond = mapSummary(seconds, (s) => COUNT / s);
    const tree = trials[0]!.treeSeconds === undefined ? null : summarize(trials.map((t) => t.treeSeconds!));
    return {
      variant,
      seconds,
      perSecond,
      treeSeconds: tree,
      vsGit: round3(perSecond.median / rate('git add+commit')),
      vsGitFsync: round3(perSecond.median / rate('git add+commit (fsync)')),
      pairedVsGit: pairedSpeedup(seconds.samples, samples.get('git add+commit')!.map((t) => t.seconds)),
    };
  });
  printTable(
    `${COUNT} small files, median (min–max) of ${ROUNDS}; git time is add+commit only`,
    ['variant', 'seconds', 'files (versions)/s', 'work-tree write s', 'vs git', 'vs git (fsync)', 'per round vs git'],
    rows.map((r) => [
      r.variant,
      spread(r.seconds),
      spread(r.perSecond),
      r.treeSeconds ? spread(r.treeSeconds) : '',
      r.vsGit,
      r.vsGitFsync,
      r.pairedVsGit ? spread(r.pairedVsGit) : '',
    ]),
  );
  if (httpReason !== null) console.log(`\nstrata HTTP: not measured: ${httpReason}`);
  const targets = rows
    .filter((r) => r.variant.startsWith('strata'))
    .flatMap((r) => [target(`${r.variant}: versions/s`, r.perSecond.median, '>=', 5000), target(`${r.variant}: ÷ git add+commit rate (per round)`, r.pairedVsGit?.median ?? r.vsGit, '>=', 1, '×')]);
  printTargets(targets);
  const file = writeResult('small-writes', {
    benchmark: 'small-writes',
    machine,
    params: { files: COUNT, totalBytes: TOTAL_BYTES, rounds: ROUNDS, inProcessInFlight: IN_PROCESS_IN_FLIGHT, httpConcurrency: HTTP_CONCURRENCY },
    variants: rows as Array<{ variant: Variant; seconds: Summary }>,
    targets,
    ...(httpReason === null ? {} : { httpNotMeasured: httpReason }),
  });
  console.log(`\nresult: ${file}`);
}

await main();
