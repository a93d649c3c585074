// Issue 13 item 18: `strata git push` of a real-shaped history — 300 commits over 2,350 files (the
// first commit 2,000 files of 1–8 KB; each later one edits ~10 files and adds ~1) — against the git
// peer doing the same transfer, `git fast-export --all | git fast-import` into a fresh repository,
// in the same round. Also timed: pushing the same history again into a second project of the same
// home (every blob already stored: only commits and snapshots are new). Target: ≥ 1.0× git.
// Both sides run as users run them: `strata git push` is the CLI, talking to a `strata serve` child.
//
//   node dist/bench/git-push.js       (BENCH_PUSH_COMMITS, BENCH_PUSH_FILES, BENCH_ROUNDS)
// Result: bench/results/git-push.json.
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { CLI_MAIN, freshDir, machineInfo, removeDir, writeResult } from './lib/env.js';
import { GIT_ENV, git, gitConfig } from './lib/git.js';
import { prng } from './lib/pool.js';
import { run } from './lib/proc.js';
import { bootstrapBenchHome, startServerChild } from './lib/strata.js';
import { now, pairedSpeedup, round3, seconds, summarize, target } from './lib/stats.js';
import { printTable, printTargets, spread } from './lib/table.js';

const COMMITS = Number(process.env['BENCH_PUSH_COMMITS'] ?? 300);
const FILES = Number(process.env['BENCH_PUSH_FILES'] ?? 2_350);
const ROUNDS = Number(process.env['BENCH_ROUNDS'] ?? 3);
const FIRST = Math.min(FILES, 2_000);

/** The history as a fast-import stream (built once, imported untimed into the source repository). */
function historyStream(): Buffer {
  const next = prng(20261124);
  const random = () => next() / 4294967296;
  const parts: Buffer[] = [];
  const text = (s: string) => parts.push(Buffer.from(s));
  let mark = 0;
  let edits = 0;
  const blob = (): number => {
    const size = 1024 + Math.floor(random() * 7 * 1024);
    const data = Buffer.from(`edit ${edits++}\n${'matrix solve flux kernel residual '.repeat(Math.ceil(size / 34))}`.slice(0, size));
    mark += 1;
    text(`blob\nmark :${mark}\ndata ${data.length}\n`);
    parts.push(data, Buffer.from('\n'));
    return mark;
  };
  const paths: string[] = [];
  const addsPerCommit = (FILES - FIRST) / Math.max(1, COMMITS - 1);
  let time = 1_767_225_600;
  for (let c = 0; c < COMMITS; c++) {
    const changes: Array<[string, number]> = [];
    if (c === 0) {
      for (let i = 0; i < FIRST; i++) {
        const path = `src/pkg${String(i % 40).padStart(2, '0')}/file${i}.m`;
        paths.push(path);
        changes.push([path, blob()]);
      }
    } else {
      for (let k = 0; k < 10; k++) changes.push([paths[Math.floor(random() * paths.length)]!, blob()]);
      const adds = Math.round(c * addsPerCommit) - Math.round((c - 1) * addsPerCommit);
      for (let k = 0; k < adds && paths.length < FILES; k++) {
        const path = `analysis/run${c}-${k}.py`;
        paths.push(path);
        changes.push([path, blob()]);
      }
    }
    time += 3600;
    const message = `commit ${c}\n`;
    text(`commit refs/heads/main\nmark :${++mark}\nauthor Ada <ada@lab.example> ${time} +0100\ncommitter Ada <ada@lab.example> ${time} +0100\ndata ${Buffer.byteLength(message)}\n${message}`);
    for (const [path, m] of changes) text(`M 100644 :${m} ${path}\n`);
    text('\n');
  }
  text('done\n');
  return Buffer.concat(parts);
}

function spawnTimed(command: string, args: string[], options: { cwd: string; env: NodeJS.ProcessEnv }): Promise<number> {
  const start = now();
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { ...options, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve(seconds(start)) : reject(new Error(`${command} ${args.join(' ')} exited ${code}: ${stderr.slice(0, 2000)}`))));
  });
}

async function buildSource(source: string): Promise<void> {
  await run('git', ['init', '-q', '-b', 'main', source], { env: GIT_ENV });
  await git(source, ['fast-import', '--quiet'], { input: historyStream() });
  await git(source, ['checkout', '-q', '-f', 'main']);
}

async function main(): Promise<void> {
  const root = freshDir('git-push');
  const source = join(root, 'source');
  await buildSource(source);
  const files = Number((await git(source, ['ls-files'])).split('\n').filter(Boolean).length);
  const commits = Number((await git(source, ['rev-list', '--count', 'main'])).trim());
  console.log(`history: ${commits} commits, ${files} files at the tip`);

  const home = join(root, 'home');
  const { apiKey } = await bootstrapBenchHome(home);
  const server = await startServerChild(home);
  const cliEnv = { ...GIT_ENV, STRATA_SERVER_URL: server.url, STRATA_API_KEY: apiKey, XDG_CONFIG_HOME: join(root, 'config') };
  const strata = (args: string[], cwd: string) => run(process.execPath, [CLI_MAIN, ...args], { cwd, env: cliEnv });
  const gitSeconds: number[] = [];
  const pushSeconds: number[] = [];
  const repushSeconds: number[] = [];
  try {
    for (let round = 0; round < ROUNDS; round++) {
      // git: export the whole history and import it into a fresh repository, one pipeline
      const target = join(root, `peer-${round}`);
      await run('git', ['init', '-q', '--bare', target], { env: GIT_ENV });
      const peer = `git ${gitConfig().join(' ')} fast-export --all | git -C ${target} ${gitConfig().join(' ')} fast-import --quiet`;
      await run('sync', []);
      gitSeconds.push(await spawnTimed('bash', ['-o', 'pipefail', '-c', peer], { cwd: source, env: GIT_ENV }));

      // strata: a new project, `strata git push` from the repository
      await run('sync', []);
      const created = JSON.parse(await strata(['project', 'create', `push-${round}`, '--json'], source)) as { projectId: string };
      await git(source, ['config', 'strata.project', created.projectId]);
      pushSeconds.push(await spawnTimed(process.execPath, [CLI_MAIN, 'git', 'push', '--json'], { cwd: source, env: cliEnv }));

      // again into another project: every blob is stored already
      await run('sync', []);
      const again = JSON.parse(await strata(['project', 'create', `repush-${round}`, '--json'], source)) as { projectId: string };
      await git(source, ['config', 'strata.project', again.projectId]);
      repushSeconds.push(await spawnTimed(process.execPath, [CLI_MAIN, 'git', 'push', '--json'], { cwd: source, env: cliEnv }));
      console.log(`round ${round + 1}: git ${gitSeconds[round]!.toFixed(2)} s, push ${pushSeconds[round]!.toFixed(2)} s, again ${repushSeconds[round]!.toFixed(2)} s`);
    }
  } finally {
    await server.close();
  }

  const vsGit = pairedSpeedup(pushSeconds, gitSeconds)!;
  const againVsGit = pairedSpeedup(repushSeconds, gitSeconds)!;
  printTable(`push of ${commits} commits, ${files} files (median (min–max) of ${ROUNDS})`, ['variant', 'seconds'], [
    ['git fast-export | fast-import', spread(summarize(gitSeconds))],
    ['strata git push', spread(summarize(pushSeconds))],
    ['strata git push, blobs stored', spread(summarize(repushSeconds))],
  ]);
  console.log(`\nstrata vs git: ${spread(vsGit)}x; already stored vs git: ${spread(againVsGit)}x`);
  const checks = [target('push vs git fast-export | fast-import', vsGit.median, '>=', 1.0, 'x')];
  printTargets(checks);
  const file = writeResult('git-push', {
    machine: machineInfo(),
    shape: { commits, files, rounds: ROUNDS },
    seconds: { git: gitSeconds.map(round3), push: pushSeconds.map(round3), repush: repushSeconds.map(round3) },
    vsGit,
    againVsGit,
    targets: checks,
  });
  console.log(`\nresult: ${file}`);
  removeDir(root);
}

// BENCH_PUSH_SOURCE=DIR only builds the source repository there (for profiling the receive side).
const sourceOnly = process.env['BENCH_PUSH_SOURCE'];
if (sourceOnly !== undefined && sourceOnly !== '') await buildSource(sourceOnly);
else await main();
