// Benchmark 4 of issue 4, end to end through the engine: a project with 10,000 files and 1,000
// snapshots (built untimed in process: the first snapshot holds 10,000 files of 1–8 KB, each later one
// follows ~10 modified files and a few added and deleted ones; every 100th is tagged). Timed: the
// engine's git export of the whole chain (SQLite snapshot diffs + content from the local store + the
// fast-import writer), consumed and counted in process, and GET .../git-export over HTTP from a
// `strata serve` child, downloaded by curl into /dev/null. Peer, same run: `git fast-export --all` of the equivalent repository (our
// stream imported with `git fast-import`, untimed) into /dev/null. Target: ≥ 1.0× git's throughput.
//
//   node dist/bench/git-export-project.js       (BENCH_GIT_COMMITS, BENCH_GIT_FILES, BENCH_ROUNDS)
import { spawn } from 'node:child_process';
import { closeSync, existsSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { openLocalEngine } from '../engine/local.js';
import type { Actor } from '../engine/types.js';
import { BENCH_TMP, freshDir, machineInfo, removeDir, writeResult } from './lib/env.js';
import { GIT_ENV, git, gitConfig } from './lib/git.js';
import { prng } from './lib/pool.js';
import { MB, run } from './lib/proc.js';
import { bootstrapBenchHome, startServerChild } from './lib/strata.js';
import { now, pairedSpeedup, round3, seconds, summarize, target } from './lib/stats.js';
import { printTable, printTargets, spread } from './lib/table.js';

const COMMITS = Number(process.env['BENCH_GIT_COMMITS'] ?? 1000);
const FILES = Number(process.env['BENCH_GIT_FILES'] ?? 10_000);
const ROUNDS = Number(process.env['BENCH_ROUNDS'] ?? 3);
const actor: Actor = { id: 'bench', kind: 'local', name: 'Bench' };

async function buildProject(home: string): Promise<{ projectId: string; tipId: string; versions: number }> {
  const local = await openLocalEngine({ home });
  try {
    const orgs = await local.repository.access.listOrganizations();
    const project = await local.engine.createProject({ orgId: orgs[0]!.orgId, name: 'git-export' });
    const next = prng(20261122);
    const random = () => next() / 4294967296;
    const text = (n: number) => {
      const size = 1024 + Math.floor(random() * 7 * 1024);
      return Buffer.from(`version ${n}\n${'data matrix solve flux kernel '.repeat(Math.ceil(size / 30))}`.slice(0, size));
    };
    const paths: string[] = [];
    let versions = 0;
    const write = (path: string) => local.engine.writeFile({ projectId: project.projectId, path, actor, content: text(versions++) });
    const writes: Promise<unknown>[] = [];
    for (let i = 0; i < FILES; i++) {
      const path = `src/pkg${String(i % 100).padStart(2, '0')}/file${i}.m`;
      paths.push(path);
      writes.push(write(path));
      if (writes.length >= 256) await Promise.all(writes.splice(0));
    }
    await Promise.all(writes.splice(0));
    let tip = await local.engine.createSnapshot({ projectId: project.projectId, message: 'import', actor });
    for (let c = 1; c < COMMITS; c++) {
      for (let k = 0; k < 10; k++) writes.push(write(paths[Math.floor(random() * paths.length)]!));
      await Promise.all(writes.splice(0));
      const adds = Math.floor(random() * 3);
      for (let k = 0; k < adds; k++) {
        const path = `src/new/c${c}-${k}.py`;
        paths.push(path);
        await write(path);
      }
      if (random() < 0.5) {
        const index = Math.floor(random() * paths.length);
        await local.engine.deleteFile({ projectId: project.projectId, path: paths[index]!, actor });
        paths.splice(index, 1);
      }
      tip = await local.engine.createSnapshot({ projectId: project.projectId, message: `snapshot ${c}\n`, actor });
      if (c % 100 === 0) await local.engine.addTag({ projectId: project.projectId, snapshotId: tip.snapshotId, tag: `v${c / 100}`, actor });
    }
    return { projectId: project.projectId, tipId: tip.snapshotId, versions };
  } finally {
    await local.close();
  }
}

async function countStream(stream: AsyncIterable<Uint8Array>): Promise<number> {
  let bytes = 0;
  for await (const chunk of stream) bytes += chunk.length;
  return bytes;
}

async function gitFastExport(repo: string): Promise<number> {
  const devNull = openSync('/dev/null', 'w');
  try {
    const start = now();
    await new Promise<void>((resolve, reject) => {
      const child = spawn('git', [...gitConfig(), 'fast-export', '--all'], { cwd: repo, env: GIT_ENV, stdio: ['ignore', devNull, 'pipe'] });
      child.on('error', reject);
      child.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`git fast-export exited ${code}`))));
    });
    return seconds(start);
  } finally {
    closeSync(devNull);
  }
}

async function main(): Promise<void> {
  const root = freshDir('git-export-project');
  try {
    // BENCH_GIT_HOME keeps the built project between runs (building 1,000 snapshots of 10,000 files
    // takes ~8 minutes here); it is reused when it holds a project of the same shape.
    const kept = process.env['BENCH_GIT_HOME'];
    const home = kept ?? join(root, 'home');
    const marker = join(home, 'bench-git-export.json');
    let apiKey: string;
    let built: { projectId: string; tipId: string; versions: number };
    const shape = `${COMMITS}x${FILES}`;
    const previous = kept !== undefined && existsSync(marker) ? (JSON.parse(readFileSync(marker, 'utf8')) as { shape: string; apiKey: string; built: typeof built }) : null;
    if (previous !== null && previous.shape === shape) {
      ({ apiKey, built } = previous);
      console.log(`reusing the project built in ${home}`);
    } else {
      if (kept !== undefined) rmSync(kept, { recursive: true, force: true });
      ({ apiKey } = await bootstrapBenchHome(home));
      const t0 = now();
      built = await buildProject(home);
      console.log(`built ${COMMITS} snapshots of ~${FILES} files (${built.versions} versions) in ${seconds(t0).toFixed(0)} s`);
      if (kept !== undefined) writeFileSync(marker, JSON.stringify({ shape, apiKey, built }));
    }

    // The equivalent git repository, from our own export (untimed).
    const repo = join(root, 'repo.git');
    await git(root, ['init', '-q', '--bare', repo]);
    const local = await openLocalEngine({ home });
    let streamBytes = 0;
    try {
      const stream = await local.engine.gitExport({ projectId: built.projectId, snapshotId: built.tipId });
      await new Promise<void>((resolve, reject) => {
        const child = spawn('git', [...gitConfig(), 'fast-import', '--quiet'], { cwd: repo, env: GIT_ENV, stdio: ['pipe', 'ignore', 'pipe'] });
        child.on('error', reject);
        child.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`git fast-import exited ${code}`))));
        pipeline(Readable.from(stream), child.stdin).catch(reject);
      });
      const commits = Number((await git(repo, ['rev-list', '--count', 'main'])).trim());
      if (commits !== COMMITS) throw new Error(`expected ${COMMITS} commits, git has ${commits}`);

      const server = await startServerChild(home);
      const samples = { inProcess: [] as number[], http: [] as number[], git: [] as number[] };
      try {
        for (let round = 0; round < ROUNDS; round++) {
          const order = ['inProcess', 'http', 'git'] as const;
          for (const variant of [...order.slice(round % 3), ...order.slice(0, round % 3)]) {
            if (variant === 'git') {
              samples.git.push(await gitFastExport(repo));
            } else if (variant === 'inProcess') {
              const start = now();
              streamBytes = await countStream(await local.engine.gitExport({ projectId: built.projectId, snapshotId: built.tipId }));
              samples.inProcess.push(seconds(start));
            } else {
              // curl into /dev/null, as git fast-export writes to /dev/null: the client costs what a
              // real one (git fast-import reading a pipe) would, not what a JavaScript fetch stream does.
              const start = now();
              const out = await run('curl', ['-sS', '-o', '/dev/null', '-w', '%{http_code} %{size_download}', '-H', `authorization: Bearer ${apiKey}`, `${server.url}/v1/projects/${built.projectId}/fs/snapshots/${built.tipId}/git-export`]);
              samples.http.push(seconds(start));
              const [status, size] = out.trim().split(' ');
              if (status !== '200') throw new Error(`git-export answered ${status}`);
              const bytes = Number(size);
              if (bytes !== streamBytes && streamBytes > 0) throw new Error(`HTTP export sent ${bytes} bytes, in process ${streamBytes}`);
            }
            console.log(`  round ${round + 1} ${variant}: ${samples[variant][samples[variant].length - 1]!.toFixed(2)} s`);
          }
        }
      } finally {
        await server.close();
      }
      const mbps = (s: number[]) => summarize(s.map((x) => streamBytes / MB / x));
      const rows = (['inProcess', 'http', 'git'] as const).map((v) => [
        v === 'inProcess' ? 'Strata export, in process' : v === 'http' ? 'Strata GET git-export (HTTP)' : 'git fast-export --all',
        spread(summarize(samples[v])),
        spread(mbps(samples[v])),
        spread(summarize(samples[v].map((x) => COMMITS / x))),
      ]);
      printTable(`Git export of ${COMMITS} snapshots × ~${FILES} files (${(streamBytes / MB).toFixed(0)} MB stream)`, ['variant', 'seconds', 'MB/s', 'commits/s'], rows);
      const inProcessRatio = pairedSpeedup(samples.inProcess, samples.git);
      const httpRatio = pairedSpeedup(samples.http, samples.git);
      const checks = [
        target('Strata in process ÷ git fast-export (throughput, per round)', inProcessRatio?.median ?? 0, '>=', 1),
        target('Strata over HTTP ÷ git fast-export (throughput, per round)', httpRatio?.median ?? 0, '>=', 1),
      ];
      printTargets(checks);
      console.log(
        `result: ${writeResult('git-export-project', {
          machine: machineInfo(),
          benchTmp: BENCH_TMP,
          commits: COMMITS,
          files: FILES,
          streamBytes,
          seconds: { inProcess: summarize(samples.inProcess), http: summarize(samples.http), git: summarize(samples.git) },
          ratios: { inProcess: inProcessRatio, http: httpRatio },
          targets: checks.map((c) => ({ ...c, value: round3(c.value) })),
        })}`,
      );
    } finally {
      await local.close();
    }
  } finally {
    removeDir(root);
  }
}

await main();
