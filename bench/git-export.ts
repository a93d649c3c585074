// Benchmark: git export of a synthetic 1,000-commit, 10,000-file history, model level. Strata's
// fast-import writer (engine/git/fast-import-writer.ts) produces the stream from content held in
// memory (served through openContent like the store would), counting the bytes; the peer is
// `git fast-export --all` of the same history (built, untimed, by feeding our stream to
// `git fast-import`), writing to /dev/null. Rounds alternate the two.
import { spawn } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { type ExportChange, type ExportCommit, writeFastImport } from '../engine/git/fast-import-writer.js';
import { hashBuffer } from '../engine/hash.js';
import { BENCH_TMP, freshDir, machineInfo, removeDir, selected, writeResult } from './lib/env.js';
import { GIT_ENV, git, gitConfig } from './lib/git.js';
import { MB, RssSampler } from './lib/proc.js';
import { mapSummary, now, pairedSpeedup, round3, type Summary, seconds, summarize, target } from './lib/stats.js';
import { printTable, printTargets, spread } from './lib/table.js';

const COMMITS = Number(process.env['BENCH_GIT_COMMITS'] ?? 1000);
const FILES = Number(process.env['BENCH_GIT_FILES'] ?? 10_000);
const ROUNDS = Number(process.env['BENCH_ROUNDS'] ?? 3);
const MODIFIES = 10;

/** mulberry32: small, fast, deterministic. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

interface History {
  commits: ExportCommit[];
  content: Map<string, Buffer>;
  contentBytes: number;
}

/**
 * The first commit adds FILES files of 1–8 KB; each later one modifies MODIFIES of them and adds and
 * deletes 0–4 each (and flips an exec bit now and then); every 100th commit is tagged. Texts are
 * windows of one pseudo-random word soup behind a unique first line, so every version is distinct.
 */
function buildHistory(): History {
  const random = prng(20261122);
  const words = ['matrix', 'solve', 'data', 'vector', 'sample', 'kernel', 'mesh', 'grid', 'flux', 'model', 'theta', 'alpha', 'result', 'import', 'return', 'value'];
  let soup = '';
  while (soup.length < 2 * 1024 * 1024) {
    soup += words[Math.floor(random() * words.length)]!;
    soup += random() < 0.1 ? '\n' : ' ';
  }
  const pool = Buffer.from(soup);
  const content = new Map<string, Buffer>();
  let contentBytes = 0;
  let versions = 0;
  const makeContent = (path: string): { contentHash: string; size: number } => {
    const size = 1024 + Math.floor(random() * 7 * 1024);
    const head = Buffer.from(`${path} version ${versions++}\n`);
    const start = Math.floor(random() * (pool.length - size));
    const bytes = Buffer.concat([head, pool.subarray(start, start + size - head.length)]);
    const contentHash = hashBuffer(bytes);
    content.set(contentHash, bytes);
    contentBytes += bytes.length;
    return { contentHash, size: bytes.length };
  };
  const live: string[] = [];
  const executable = new Set<string>();
  let added = 0;
  const newPath = () => `src/d${String(added % 100).padStart(2, '0')}/file-${added++}.m`;
  const commits: ExportCommit[] = [];
  for (let c = 0; c < COMMITS; c++) {
    const changes: ExportChange[] = [];
    const modify = (path: string) => changes.push({ kind: 'modify', path, ...makeContent(path), executable: executable.has(path) });
    if (c === 0) {
      for (let i = 0; i < FILES; i++) live.push(newPath());
      for (const path of live) modify(path);
    } else {
      const touched = new Set<string>();
      for (let k = 0; k < MODIFIES; k++) touched.add(live[Math.floor(random() * live.length)]!);
      const deletes = Math.floor(random() * 5);
      for (let k = 0; k < deletes; k++) {
        const index = Math.floor(random() * live.length);
        const path = live[index]!;
        if (touched.has(path)) continue;
        live[index] = live.at(-1)!;
        live.pop();
        executable.delete(path);
        changes.push({ kind: 'delete', path });
      }
      if (random() < 0.05) {
        const path = [...touched][0]!;
        if (executable.has(path)) executable.delete(path);
        else executable.add(path);
      }
      for (const path of touched) modify(path);
      const adds = Math.floor(random() * 5);
      for (let k = 0; k < adds; k++) {
        const path = newPath();
        live.push(path);
        modify(path);
      }
    }
    commits.push({
      message: `Snapshot ${c + 1}\n`,
      actor: { name: 'Bench Actor', email: 'bench@example.com' },
      timeMs: Date.UTC(2026, 0, 1) + c * 60_000,
      tags: c % 100 === 99 ? [`s${c + 1}`] : [],
      changes,
    });
  }
  return { commits, content, contentBytes };
}

interface Sample {
  seconds: number;
  bytes: number;
  rssGrowthMB?: number;
}

async function strataTrial(history: History): Promise<Sample> {
  // An async generator per content, as a store's stream would be (one chunk: these are small files).
  async function* openContent(hash: string): AsyncGenerator<Buffer> {
    yield history.content.get(hash)!;
  }
  const sampler = new RssSampler(20).start();
  const start = now();
  let bytes = 0;
  for await (const chunk of writeFastImport(history.commits, { openContent })) bytes += chunk.length;
  const elapsed = seconds(start);
  const peak = sampler.stop();
  return { seconds: elapsed, bytes, rssGrowthMB: round3((peak - sampler.baseline) / MB) };
}

/** `git fast-export --all` to /dev/null: its best case (nobody reads the bytes). */
function gitTrial(repo: string, bytes: number): Promise<Sample> {
  const devNull = openSync('/dev/null', 'w');
  const start = now();
  return new Promise<Sample>((resolve, reject) => {
    const child = spawn('git', [...gitConfig(), 'fast-export', '--all'], { cwd: repo, env: GIT_ENV, stdio: ['ignore', devNull, 'inherit'] });
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve({ seconds: seconds(start), bytes }) : reject(new Error(`git fast-export exited ${code}`))));
  }).finally(() => closeSync(devNull));
}

/** Bytes `git fast-export --all` writes (counted once, untimed). */
async function gitStreamBytes(repo: string): Promise<number> {
  const child = spawn('git', [...gitConfig(), 'fast-export', '--all'], { cwd: repo, env: GIT_ENV, stdio: ['ignore', 'pipe', 'inherit'] });
  let bytes = 0;
  for await (const chunk of child.stdout) bytes += (chunk as Buffer).length;
  return bytes;
}

async function buildGitRepo(history: History): Promise<string> {
  const repo = freshDir('git-export/repo.git');
  await git(repo, ['init', '-q', '--bare']);
  async function* openContent(hash: string): AsyncGenerator<Buffer> {
    yield history.content.get(hash)!;
  }
  const child = spawn('git', [...gitConfig(), 'fast-import', '--quiet'], { cwd: repo, env: GIT_ENV, stdio: ['pipe', 'inherit', 'inherit'] });
  const exit = new Promise<number | null>((resolve) => child.on('close', resolve));
  await pipeline(Readable.from(writeFastImport(history.commits, { openContent })), child.stdin);
  if ((await exit) !== 0) throw new Error('git fast-import failed');
  const count = Number((await git(repo, ['rev-list', '--count', 'refs/heads/main'])).trim());
  if (count !== COMMITS) throw new Error(`git has ${count} commits, expected ${COMMITS}`);
  return repo;
}

async function main(): Promise<void> {
  const machine = machineInfo();
  console.log(`git-export: ${COMMITS} commits, ${FILES} files at first, ${ROUNDS} rounds, scratch ${BENCH_TMP}`);
  let t = now();
  const history = buildHistory();
  const changes = history.commits.reduce((sum, c) => sum + c.changes.length, 0);
  console.log(`  history: ${changes} changes, ${history.content.size} contents, ${(history.contentBytes / MB).toFixed(1)} MB (${seconds(t).toFixed(1)} s)`);
  t = now();
  const repo = await buildGitRepo(history);
  const gitBytes = await gitStreamBytes(repo);
  console.log(`  git repository built by fast-import from our stream (${seconds(t).toFixed(1)} s); git fast-export writes ${(gitBytes / MB).toFixed(1)} MB`);

  // One untimed run each: JIT for ours, page cache for git's pack.
  await strataTrial(history);
  await gitTrial(repo, gitBytes);
  const samples: Record<'strata writer' | 'git fast-export', Sample[]> = { 'strata writer': [], 'git fast-export': [] };
  for (let round = 0; round < ROUNDS; round++) {
    const order = round % 2 === 0 ? (['strata writer', 'git fast-export'] as const) : (['git fast-export', 'strata writer'] as const);
    for (const variant of order) {
      if (!selected(variant)) continue;
      const sample = variant === 'strata writer' ? await strataTrial(history) : await gitTrial(repo, gitBytes);
      samples[variant].push(sample);
      console.log(`  round ${round + 1} ${variant}: ${sample.seconds.toFixed(3)} s, ${(sample.bytes / MB / sample.seconds).toFixed(0)} MB/s`);
    }
  }

  const rows = Object.entries(samples)
    .filter(([, list]) => list.length > 0)
    .map(([variant, list]) => {
      const secs = summarize(list.map((s) => s.seconds));
      const bytes = list[0]!.bytes;
      const growth = list.flatMap((s) => (s.rssGrowthMB === undefined ? [] : [s.rssGrowthMB]));
      return {
        variant,
        seconds: secs,
        streamMB: round3(bytes / MB),
        mbps: mapSummary(secs, (s) => bytes / MB / s),
        commitsPerSecond: mapSummary(secs, (s) => COMMITS / s),
        rssGrowthMB: growth.length > 0 ? summarize(growth) : null,
      };
    });
  const ours = rows.find((r) => r.variant === 'strata writer');
  const theirs = rows.find((r) => r.variant === 'git fast-export');
  const ratio = ours && theirs ? round3(ours.mbps.median / theirs.mbps.median) : Number.NaN;
  // Round by round, on seconds per byte (the two streams differ by a few header bytes): our MB/s ÷ git's.
  const paired: Summary | null =
    ours && theirs ? pairedSpeedup(samples['strata writer'].map((s) => s.seconds / s.bytes), samples['git fast-export'].map((s) => s.seconds / s.bytes)) : null;
  printTable(
    `git export of ${COMMITS} commits (${FILES} files at first), median (min–max) of ${ROUNDS}`,
    ['variant', 'seconds', 'stream MB', 'MB/s', 'commits/s', 'RSS growth MB'],
    rows.map((r) => [r.variant, spread(r.seconds), r.streamMB, spread(r.mbps), spread(r.commitsPerSecond), r.rssGrowthMB === null ? '' : spread(r.rssGrowthMB)]),
  );
  console.log(`\nthroughput ratio (ours ÷ git fast-export): ${ratio}${paired ? `; round by round ${spread(paired)}` : ''}`);
  const targets = [target('strata writer MB/s ÷ git fast-export MB/s', paired?.median ?? ratio, '>=', 1.0, '×')];
  printTargets(targets);
  const file = writeResult('git-export', {
    benchmark: 'git-export',
    machine,
    params: { commits: COMMITS, initialFiles: FILES, changes, contents: history.content.size, contentMB: round3(history.contentBytes / MB), rounds: ROUNDS, mbIs: '1e6 bytes' },
    variants: rows,
    throughputRatio: ratio,
    pairedThroughputRatio: paired,
    targets,
  });
  console.log(`\nresult: ${file}`);
  removeDir(join(BENCH_TMP, 'git-export'));
}

await main();
