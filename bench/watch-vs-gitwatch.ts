// Benchmark 4 of issue 3: 10,000 small-file saves — versions per second of watch mode vs a
// gitwatch-style loop (what https://github.com/gitwatch/gitwatch does per change: `git add` +
// `git commit`), on the same files. Target: ≥ 50×.
//
// Strata: the saves are written as fast as a script can, into a watched directory; the clock stops
// when the daemon logged the last durable version. Git: each save is written, then added and
// committed before the next (gitwatch serializes them); run for a subset (default 500 saves) and
// reported as a rate, since 10,000 commits take minutes.
//
//   node dist/bench/watch-vs-gitwatch.js [--saves 10000] [--git-saves 500]
// Result: bench/results/watch-vs-gitwatch.json.

import { spawn } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BENCH_TMP, machineInfo, writeResult } from './lib/env.js';
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

async function strataRun(saves: number): Promise<{ seconds: number; versions: number }> {
  const dir = join(BENCH_TMP, 'gitwatch-strata');
  const home = join(BENCH_TMP, 'gitwatch-strata-home');
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

async function gitwatchRun(saves: number): Promise<{ seconds: number; commits: number }> {
  const dir = join(BENCH_TMP, 'gitwatch-git');
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  await git(dir, ['init', '-q']);
  await git(dir, ['config', 'user.name', 'bench']);
  await git(dir, ['config', 'user.email', 'bench@example.org']);
  const start = Date.now();
  for (let i = 0; i < saves; i++) {
    save(dir, i);
    await git(dir, ['add', '--all', '.']);
    await git(dir, ['commit', '-q', '-m', `save ${i}`]);
  }
  const seconds = (Date.now() - start) / 1000;
  rmSync(dir, { recursive: true, force: true });
  return { seconds, commits: saves };
}

async function main(): Promise<void> {
  const saves = arg('saves', 10_000);
  const gitSaves = arg('git-saves', 500);
  const strata = await strataRun(saves);
  const strataRate = strata.versions / strata.seconds;
  process.stderr.write(`strata watch: ${strata.versions} versions in ${strata.seconds.toFixed(2)} s = ${strataRate.toFixed(0)}/s\n`);
  const gitwatch = await gitwatchRun(gitSaves);
  const gitRate = gitwatch.commits / gitwatch.seconds;
  process.stderr.write(`gitwatch-style: ${gitwatch.commits} commits in ${gitwatch.seconds.toFixed(2)} s = ${gitRate.toFixed(1)}/s\n`);
  const ratio = strataRate / gitRate;
  const result = {
    benchmark: 'watch-vs-gitwatch',
    machine: machineInfo(),
    params: { saves, gitSaves },
    strata: { versions: strata.versions, seconds: Math.round(strata.seconds * 100) / 100, versionsPerSecond: Math.round(strataRate) },
    gitwatch: { commits: gitwatch.commits, seconds: Math.round(gitwatch.seconds * 100) / 100, commitsPerSecond: Math.round(gitRate * 10) / 10 },
    ratio: Math.round(ratio * 10) / 10,
    targets: { 'ratio >= 50': ratio >= 50, 'every save versioned': strata.versions === saves },
  };
  const file = writeResult('watch-vs-gitwatch', result);
  process.stdout.write(`${JSON.stringify(result, null, 2)}\nwritten to ${file}\n`);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await main();
