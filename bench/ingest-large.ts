// Benchmark 1: ingest of 4 × 256 MB random files. Peers in the same run: cp (with and without fsync of
// the copies) and `git add`; Strata in this process (writeFile { file }) and over HTTP (PUT fs/write
// streaming the file) against a `strata serve` child process. The in-process variants run the engine in
// a process of their own (bench/ingest-large-child.ts), timed inside it, so the peak RSS is the
// engine's. Rounds are interleaved so the machine's noise lands on every variant alike.
//
// A 256 MiB file is above the default dataset threshold (64 MiB, issue 4), so with default settings it
// is stored as a dataset: chunked, its shards stored as objects behind a manifest. The "plain objects"
// variant raises the project's threshold above the file size, so the file is one object (the ingest
// path of the foundation issue, and what any file below the threshold takes).
import { randomFillSync } from 'node:crypto';
import { closeSync, existsSync, fsyncSync, linkSync, mkdirSync, openSync, readSync, statSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { BENCH_TMP, freshDir, machineInfo, REPO_ROOT, removeDir, selected, writeResult } from './lib/env.js';
import { writePath } from './lib/http.js';
import { git } from './lib/git.js';
import { MB, MiB, run, settleDisk, timed } from './lib/proc.js';
import { mapSummary, pairedSpeedup, round3, type Summary, summarize, target } from './lib/stats.js';
import { httpUnavailable, startHttpTarget } from './lib/strata.js';
import { printTable, printTargets, spread } from './lib/table.js';

const FILES = 4;
const FILE_BYTES = Number(process.env['BENCH_INGEST_MIB'] ?? 256) * MiB;
const ROUNDS = Number(process.env['BENCH_ROUNDS'] ?? 3);
const TOTAL = FILES * FILE_BYTES;
const SRC = join(BENCH_TMP, 'ingest-src');
const sources = Array.from({ length: FILES }, (_, i) => join(SRC, `file-${i}.bin`));

type Variant = 'cp' | 'cp+fsync' | 'git add' | 'strata in-process' | 'strata in-process, plain objects' | 'strata HTTP';

interface Trial {
  seconds: number;
  /** peak RSS of the process that ingested (bytes), where measured */
  peakRss?: number;
  sampledRss?: number;
  /** RSS of that process just before the ingest started (bytes): the part of the peak not due to it */
  baselineRss?: number;
}

/** Random bytes, created once and reused by later runs (same size = same file). */
function ensureSources(): void {
  mkdirSync(SRC, { recursive: true });
  const chunk = Buffer.allocUnsafe(MiB);
  for (const file of sources) {
    if (existsSync(file) && statSync(file).size === FILE_BYTES) continue;
    const fd = openSync(file, 'w');
    for (let written = 0; written < FILE_BYTES; written += chunk.length) writeSync(fd, randomFillSync(chunk));
    fsyncSync(fd);
    closeSync(fd);
  }
}

/**
 * Reads the sources (untimed) right before each trial, so every variant reads them from the page
 * cache. Without this, whichever variant ran after an idle spell re-read them from disk: this VM
 * reclaims idle page cache (kdamond runs), and Strata alone measured 2–3 s instead of ~1 s.
 */
function warmSources(): void {
  const buffer = Buffer.allocUnsafe(MiB);
  for (const file of sources) {
    const fd = openSync(file, 'r');
    while (readSync(fd, buffer, 0, buffer.length, null) > 0);
    closeSync(fd);
  }
}

async function cpTrial(durable: boolean): Promise<Trial> {
  const dest = freshDir('ingest-cp');
  await settleDisk();
  const copies = sources.map((s) => join(dest, s.split('/').at(-1)!));
  // `sync FILE...` fsyncs each copy: the durable equivalent of an acknowledged Strata write.
  const seconds = await timed(async () => {
    await run('cp', [...sources, dest]);
    if (durable) await run('sync', copies);
  });
  removeDir(dest);
  return { seconds };
}

async function gitTrial(): Promise<Trial> {
  const repo = freshDir('ingest-git');
  await git(repo, ['init', '-q']);
  // Hard links put the files in the work tree without copying them (same disk, untimed).
  for (const s of sources) linkSync(s, join(repo, s.split('/').at(-1)!));
  await settleDisk();
  const seconds = await timed(() => git(repo, ['add', '.']));
  removeDir(repo);
  return { seconds };
}

/** The engine in a process of its own (bench/ingest-large-child.ts): its time and its peak RSS. */
async function strataInProcessTrial(plainObjects: boolean): Promise<Trial> {
  const home = freshDir('ingest-strata-home');
  await settleDisk();
  const child = join(REPO_ROOT, 'dist', 'bench', 'ingest-large-child.js');
  const out = await run(process.execPath, [child, home, plainObjects ? 'plain' : 'default', ...sources]);
  const result = JSON.parse(out.trim().split('\n').at(-1)!) as { seconds: number; peakRss: number | null; baselineRss: number; sizes: number[]; dataset: boolean[] };
  for (const size of result.sizes) if (size !== FILE_BYTES) throw new Error(`stored ${size} bytes, expected ${FILE_BYTES}`);
  if (result.dataset.some((d) => d === plainObjects)) throw new Error(`expected ${plainObjects ? 'plain objects' : 'datasets'}, got dataset flags ${result.dataset.join(',')}`);
  removeDir(home);
  return { seconds: result.seconds, baselineRss: result.baselineRss, ...(result.peakRss === null ? {} : { peakRss: result.peakRss }) };
}

async function strataHttpTrial(): Promise<Trial> {
  const home = freshDir('ingest-strata-http-home');
  const target = await startHttpTarget(home, FILES);
  try {
    await settleDisk();
    const baselineRss = target.server.rss() ?? undefined;
    const start = process.hrtime.bigint();
    const written = await Promise.all(
      sources.map((file, i) => target.client.json<{ version: { size: number } }>('PUT', writePath(target.projectId, `data/file-${i}.bin`), { file })),
    );
    const seconds = Number(process.hrtime.bigint() - start) / 1e9;
    for (const w of written) if (w.version.size !== FILE_BYTES) throw new Error(`stored ${w.version.size} bytes over HTTP`);
    const hwm = target.server.peakRss();
    return { seconds, ...(hwm === null ? {} : { peakRss: hwm }), ...(baselineRss === undefined ? {} : { baselineRss }) };
  } finally {
    await target.close();
    removeDir(home);
  }
}

async function main(): Promise<void> {
  const machine = machineInfo();
  console.log(`ingest-large: ${FILES} × ${FILE_BYTES / MiB} MiB random files, ${ROUNDS} rounds, scratch ${BENCH_TMP}`);
  ensureSources();
  const httpReason = httpUnavailable();
  const trials: Record<Variant, (() => Promise<Trial>) | null> = {
    cp: () => cpTrial(false),
    'cp+fsync': () => cpTrial(true),
    'git add': gitTrial,
    'strata in-process': () => strataInProcessTrial(false),
    'strata in-process, plain objects': () => strataInProcessTrial(true),
    'strata HTTP': httpReason === null ? strataHttpTrial : null,
  };
  const variants = Object.keys(trials) as Variant[];
  const samples = new Map<Variant, Trial[]>(variants.map((v) => [v, []]));
  for (let round = 0; round < ROUNDS; round++) {
    // Rotate the order each round so no variant always runs right after the slow git add.
    const order = variants.map((_, i) => variants[(i + round) % variants.length]!);
    for (const variant of order) {
      const trial = trials[variant];
      if (trial === null || !selected(variant)) continue;
      warmSources();
      const result = await trial();
      samples.get(variant)!.push(result);
      console.log(`  round ${round + 1} ${variant}: ${result.seconds.toFixed(2)} s, ${(TOTAL / MB / result.seconds).toFixed(0)} MB/s`);
    }
  }

  const report = analyse(samples);
  printTable(
    `Ingest ${FILES} × ${FILE_BYTES / MiB} MiB (${(TOTAL / MB).toFixed(0)} MB), median (min–max) of ${ROUNDS}`,
    ['variant', 'seconds', 'MB/s', 'peak RSS MB', 'RSS before MB', 'vs cp+fsync', 'vs cp', 'vs git add', 'per round vs cp+fsync'],
    report.rows.map((r) => [
      r.variant,
      spread(r.seconds),
      spread(r.mbps),
      r.peakRssMB === null ? '' : spread(r.peakRssMB),
      r.baselineRssMB === null ? '' : spread(r.baselineRssMB),
      r.vsCpFsync,
      r.vsCp,
      r.vsGit,
      r.pairedVsCpFsync === null ? '' : spread(r.pairedVsCpFsync),
    ]),
  );
  if (httpReason !== null) console.log(`\nstrata HTTP: not measured: ${httpReason}`);
  printTargets(report.targets);
  const file = writeResult('ingest-large', {
    benchmark: 'ingest-large',
    machine,
    params: { files: FILES, fileBytes: FILE_BYTES, totalBytes: TOTAL, rounds: ROUNDS, mbIs: '1e6 bytes' },
    variants: report.rows,
    targets: report.targets,
    ...(httpReason === null ? {} : { httpNotMeasured: httpReason }),
  });
  console.log(`\nresult: ${file}`);
}

interface Row {
  variant: Variant;
  seconds: Summary;
  mbps: Summary;
  peakRssMB: Summary | null;
  sampledRssMB: Summary | null;
  baselineRssMB: Summary | null;
  /** ratios of the medians */
  vsCpFsync: number;
  vsCp: number;
  vsGit: number;
  /** round-by-round ratios (see pairedSpeedup) */
  pairedVsCpFsync: Summary | null;
  pairedVsGit: Summary | null;
}

function analyse(samples: Map<Variant, Trial[]>) {
  const rows: Row[] = [];
  const secondsOf = (v: Variant) => samples.get(v)!.map((t) => t.seconds);
  const mbpsOf = (v: Variant) => {
    const trials = samples.get(v)!;
    return trials.length === 0 ? Number.NaN : mapSummary(summarize(trials.map((t) => t.seconds)), (s) => TOTAL / MB / s).median;
  };
  for (const [variant, trials] of samples) {
    if (trials.length === 0) continue;
    const seconds = summarize(trials.map((t) => t.seconds));
    const mbps = mapSummary(seconds, (s) => TOTAL / MB / s);
    const peaks = trials.flatMap((t) => (t.peakRss === undefined ? [] : [t.peakRss / MB]));
    const sampled = trials.flatMap((t) => (t.sampledRss === undefined ? [] : [t.sampledRss / MB]));
    const baseline = trials.flatMap((t) => (t.baselineRss === undefined ? [] : [t.baselineRss / MB]));
    rows.push({
      variant,
      seconds,
      mbps,
      peakRssMB: peaks.length ? summarize(peaks) : null,
      sampledRssMB: sampled.length ? summarize(sampled) : null,
      baselineRssMB: baseline.length ? summarize(baseline) : null,
      vsCpFsync: round3(mbps.median / mbpsOf('cp+fsync')),
      vsCp: round3(mbps.median / mbpsOf('cp')),
      vsGit: round3(mbps.median / mbpsOf('git add')),
      pairedVsCpFsync: pairedSpeedup(seconds.samples, secondsOf('cp+fsync')),
      pairedVsGit: pairedSpeedup(seconds.samples, secondsOf('git add')),
    });
  }
  const targets = [];
  for (const row of rows.filter((r) => r.variant.startsWith('strata'))) {
    // Targets use the round-by-round ratios when every round has both sides.
    targets.push(target(`${row.variant}: MB/s ÷ cp+fsync MB/s`, row.pairedVsCpFsync?.median ?? row.vsCpFsync, '>=', 0.8));
    targets.push(target(`${row.variant}: speed-up vs git add`, row.pairedVsGit?.median ?? row.vsGit, '>=', 3, '×'));
    if (row.peakRssMB) targets.push(target(`${row.variant}: peak RSS (VmHWM, max of rounds)`, row.peakRssMB.max, '<=', 200, ' MB'));
  }
  return { rows, targets };
}

await main();
