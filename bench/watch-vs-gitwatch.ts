// Benchmark 4 of issue 3: 10,000 small-file saves — versions per second of watch mode vs a
// gitwatch-style loop (what https://github.com/gitwatch/gitwatch does per change: `git add` +
// `git commit`), on the same files. Target: ≥ 50×.
//
// Strata: the saves are written as fast as a script can, into a watched directory; the clock stops
// when the daemon logged the last durable version. Git: each save is written, then added and
// committed before the next (gitwatch serializes them), for all 10,000 saves (about 4 minutes here).
// Until 2026-11-24 git ran only the first 500 saves: its cheapest part, since `git add --all` and the
// commit grow with the tree (~100 commits/s over the first 500, ~42/s over all 10,000). The rate over
// the first 500 is still reported, for comparison with earlier figures.
//
// Each variant runs on a fresh journaled ext4 of its own (lib/scratch-fs.ts): on this machine's root
// filesystem, after other runs deleted many files, merely creating the 10,000 files took 3–5 s instead
// of 0.35 s, and Strata's clock (which starts before the first save) measured the disk, not Strata.
//
//   node dist/bench/watch-vs-gitwatch.js [--saves 10000] [--git-saves 10000 (fewer: a quick look)]
// Result: bench/results/watch-vs-gitwatch.json.

import { spawn } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { machineInfo, writeResult } from './lib/env.js';
import { type ScratchFs, scratchFs } from './lib/scratch-fs.js';
import { initProject, startDaemonProc } from './watch-daemon-proc.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i === -1 ? fallback : Number(process.argv[i + 1]);
}

function git(cwd: string, args: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn('git', args, { cwd, stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    child.stderr.on('data', (c: Buffer) => {
      err += c.toString();
    });
    child.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`git ${args.join(' ')}: ${err}`))));
  });
}

/** The i-th save: 100 files per directory, a few hundred bytes each, like source or notes files. */
function save(root: string, i: number): void {
  const dir = join(root, `d${Math.floor(i / 100)}`);
  if (i % 100 === 0) mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, `note${i}.md`), `# note ${i}\n\n${'lorem ipsum dolor sit amet '.repeat(10)}\n`);
}

async function strataRun(root: string, saves: number): Promise<{ seconds: number; versions: number }> {
  const dir = join(root, 'gitwatch-strata');
  const home = join(root, 'gitwatch-strata-home');
  rmSync(dir, { recursive: true, force: true });
  rmSync(home, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  await initProject(home, dir);
  const daemon = await startDaemonProc(home);
  await daemon.idle(60_000);
  const start = Date.now();
  for (let i = 0; i < saves; i++) {
    save(dir, i);
    // Yield now and then, as a real writer does between saves; keeps the bench's own loop fair.
    if (i % 200 === 199) await sleep(0);
  }
  await daemon.idle(600_000);
  const last = Math.max(...daemon.versions.map((v) => v.time));
  const versions = daemon.versions.filter((v) => v.path.endsWith('.md')).length;
  await daemon.stop();
  rmSync(dir, { recursive: true, force: true });
  rmSync(home, { recursive: true, force: true });
  return { seconds: (last - start) / 1000, versions };
}

const FIRST = 500;

async function gitwatchRun(root: string, saves: number): Promise<{ seconds: number; commits: number; firstSeconds: number | null }> {
  const dir = join(root, 'gitwatch-git');
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  await git(dir, ['init', '-q']);
  await git(dir, ['config', 'user.name', 'bench']);
  await git(dir, ['config', 'user.email', 'bench@example.org']);
  const start = Date.now();
  let firstSeconds: number | null = null;
  for (let i = 0; i < saves; i++) {
    save(dir, i);
    await git(dir, ['add', '--all', '.']);
    await git(dir, ['commit', '-q', '-m', `save ${i}`]);
    if (i + 1 === FIRST) firstSeconds = (Date.now() - start) / 1000;
    if ((i + 1) % 1000 === 0) process.stderr.write(`  git: ${i + 1}/${saves} commits, ${((Date.now() - start) / 1000).toFixed(0)} s\n`);
  }
  const seconds = (Date.now() - start) / 1000;
  rmSync(dir, { recursive: true, force: true });
  return { seconds, commits: saves, firstSeconds };
}

async function main(): Promise<void> {
  const saves = arg('saves', 10_000);
  const gitSaves = arg('git-saves', saves);
  const onScratch = async <T>(name: string, run: (root: string) => Promise<T>): Promise<T> => {
    const fs: ScratchFs = await scratchFs(name, 2048);
    filesystem = fs.kind;
    try {
      return await run(fs.dir);
    } finally {
      await fs.release();
    }
  };
  let filesystem = '';
  const strata = await onScratch('watch-vs-gitwatch-strata', (root) => strataRun(root, saves));
  const strataRate = strata.versions / strata.seconds;
  process.stderr.write(`strata watch: ${strata.versions} versions in ${strata.seconds.toFixed(2)} s = ${strataRate.toFixed(0)}/s\n`);
  const gitwatch = await onScratch('watch-vs-gitwatch-git', (root) => gitwatchRun(root, gitSaves));
  const gitRate = gitwatch.commits / gitwatch.seconds;
  const firstRate = gitwatch.firstSeconds === null ? null : FIRST / gitwatch.firstSeconds;
  process.stderr.write(`gitwatch-style: ${gitwatch.commits} commits in ${gitwatch.seconds.toFixed(2)} s = ${gitRate.toFixed(1)}/s${firstRate === null ? '' : ` (the first ${FIRST}: ${firstRate.toFixed(1)}/s)`}\n`);
  const ratio = strataRate / gitRate;
  const result = {
    benchmark: 'watch-vs-gitwatch',
    machine: machineInfo(),
    filesystem,
    params: { saves, gitSaves },
    strata: { versions: strata.versions, seconds: Math.round(strata.seconds * 100) / 100, versionsPerSecond: Math.round(strataRate) },
    gitwatch: {
      commits: gitwatch.commits,
      seconds: Math.round(gitwatch.seconds * 100) / 100,
      commitsPerSecond: Math.round(gitRate * 10) / 10,
      firstCommitsPerSecond: firstRate === null ? null : { commits: FIRST, perSecond: Math.round(firstRate * 10) / 10 },
    },
    ratio: Math.round(ratio * 10) / 10,
    ratioAgainstTheFirstCommits: firstRate === null ? null : Math.round((strataRate / firstRate) * 10) / 10,
    targets: { 'ratio >= 50': ratio >= 50, 'every save versioned': strata.versions === saves },
  };
  const file = writeResult('watch-vs-gitwatch', result);
  process.stdout.write(`${JSON.stringify(result, null, 2)}\nwritten to ${file}\n`);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await main();
