// The POSIX conformance suite pjdfstest (github.com/pjd/pjdfstest, BSD) on a Strata mount and on
// bindfs over the same disk, side by side (issue 15). The suite is never copied into this repository:
// give the path of a checkout; it is built there when its `pjdfstest` binary is missing (autoconf,
// automake and a C compiler). Run as root, as the suite expects.
//
//   node dist/bench/pjdfstest.js --pjdfstest DIR [--only chmod,chown,...] [--timeout 900] [--targets strata]
//
// `--targets strata` (or bindfs) runs one side only, to iterate: its result goes to pjdfstest-partial.json.
//
// Each of the suite's directories (tests/chmod, tests/link, ...) runs under `prove -v` with its own
// timeout. A check counts as failed when the suite planned it and it did not pass (as prove counts:
// `ok`, a skip or a TODO passes); checks a crashed or timed-out script never ran count as failed.
// Result: bench/results/pjdfstest.json, with the failing checks per script for both filesystems.

import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { freshDir, machineInfo, writeResult } from './lib/env.js';
import { run } from './lib/proc.js';
import { printTable } from './lib/table.js';
import { startBindfs, startMount } from './mount-lib.js';

const option = (name: string): string | undefined => {
  const i = process.argv.indexOf(`--${name}`);
  return i === -1 ? undefined : process.argv[i + 1];
};

/** One test script's outcome: checks planned, and the numbers of those that did not pass. */
export interface ScriptResult {
  script: string;
  planned: number;
  failed: number[];
  /** the script did not finish (crash, bad plan, timeout) */
  incomplete: boolean;
}

/** Reads `prove -v` output: a header per script, its plan, its `ok`/`not ok` lines. */
export function parseProve(output: string, timedOut: boolean): ScriptResult[] {
  const results: ScriptResult[] = [];
  let current: (ScriptResult & { passed: Set<number> }) | null = null;
  const close = () => {
    if (current === null) return;
    const { passed, ...result } = current;
    for (let n = 1; n <= result.planned; n++) if (!passed.has(n) && !result.failed.includes(n)) result.failed.push(n);
    if (passed.size + result.failed.length < result.planned) result.incomplete = true;
    result.failed.sort((a, b) => a - b);
    results.push(result);
  };
  for (const line of output.split('\n')) {
    const header = /^(\S+\.t) \.+/.exec(line);
    if (header) {
      close();
      current = { script: header[1]!, planned: 0, failed: [], incomplete: false, passed: new Set() };
      continue;
    }
    if (current === null) continue;
    const plan = /^1\.\.(\d+)/.exec(line);
    if (plan) current.planned = Number(plan[1]);
    const check = /^(not ok|ok) (\d+)(.*)$/.exec(line);
    if (check) {
      const n = Number(check[2]);
      const todo = /#\s*TODO/i.test(check[3]!);
      if (check[1] === 'ok' || todo) current.passed.add(n);
      else current.failed.push(n);
    }
    if (/Dubious|Bad plan|No plan found|Parse errors/.test(line)) current.incomplete = true;
  }
  close();
  if (timedOut && results.length > 0) results.at(-1)!.incomplete = true;
  return results;
}

/** `prove -v -r SUITE/tests/NAME` with the mount as working directory; killed after timeoutS. */
function prove(suite: string, name: string, cwd: string, timeoutS: number): Promise<{ output: string; timedOut: boolean }> {
  return new Promise((done) => {
    const child = spawn('prove', ['-v', '-r', join(suite, 'tests', name)], { cwd, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    child.stderr.on('data', () => {});
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        // already gone
      }
    }, timeoutS * 1000);
    child.once('close', () => {
      clearTimeout(timer);
      done({ output, timedOut });
    });
  });
}

async function buildSuite(suite: string): Promise<void> {
  if (existsSync(join(suite, 'pjdfstest'))) return;
  console.error(`building pjdfstest in ${suite} (autoreconf, configure, make)`);
  await run('autoreconf', ['-ifs'], { cwd: suite });
  await run('./configure', [], { cwd: suite });
  await run('make', ['pjdfstest'], { cwd: suite });
}

interface Target {
  name: string;
  dir: string;
  stop(): Promise<void>;
}

async function runSuite(target: Target, suite: string, names: string[], timeoutS: number): Promise<Record<string, ScriptResult[]>> {
  const byDir: Record<string, ScriptResult[]> = {};
  for (const name of names) {
    // Each directory in a fresh working directory of its own, so one's leftovers cannot fail another.
    const cwd = join(target.dir, `pjd-${name}`);
    mkdirSync(cwd);
    const started = Date.now();
    const { output, timedOut } = await prove(suite, name, cwd, timeoutS);
    byDir[name] = parseProve(output, timedOut);
    const failed = byDir[name].reduce((sum, s) => sum + s.failed.length, 0);
    const planned = byDir[name].reduce((sum, s) => sum + s.planned, 0);
    console.error(`${target.name} ${name}: ${failed}/${planned} failed${timedOut ? ' (timed out)' : ''} in ${((Date.now() - started) / 1000).toFixed(0)} s`);
  }
  return byDir;
}

async function main(): Promise<void> {
  const suiteArg = option('pjdfstest');
  if (suiteArg === undefined) throw new Error('give the path of a pjdfstest checkout: --pjdfstest DIR');
  if (process.getuid?.() !== 0) throw new Error('pjdfstest runs as root');
  const suite = resolve(suiteArg);
  await buildSuite(suite);
  const all = readdirSync(join(suite, 'tests'), { withFileTypes: true })
    .filter((e) => e.isDirectory())
    .map((e) => e.name)
    .sort();
  const names = option('only')?.split(',') ?? all;
  const timeoutS = Number(option('timeout') ?? 900);
  const results: Record<string, Record<string, ScriptResult[]>> = {};

  const targets = option('targets')?.split(',') ?? ['bindfs', 'strata'];
  if (targets.includes('bindfs')) {
    const src = freshDir('pjdfstest-bindfs-src');
    const bindMnt = freshDir('pjdfstest-bindfs-mnt');
    const bindfs = await startBindfs(src, bindMnt);
    try {
      results['bindfs'] = await runSuite({ name: 'bindfs', dir: bindMnt, stop: bindfs.stop }, suite, names, timeoutS);
    } finally {
      await bindfs.stop();
    }
  } else {
    results['bindfs'] = {};
  }
  if (!targets.includes('strata')) results['strata'] = {};
  else await runStrata(results, suite, names, timeoutS);
  const sum = (target: string, name: string, pick: (s: ScriptResult) => number) => (results[target]![name] ?? []).reduce((total, s) => total + pick(s), 0);
  const rows = names.map((name) => [name, sum('strata', name, (s) => s.planned), sum('strata', name, (s) => s.failed.length), sum('bindfs', name, (s) => s.failed.length)]);
  const total = (i: number) => rows.reduce((t, row) => t + (row[i] as number), 0);
  rows.push(['all', total(1), total(2), total(3)]);
  printTable('pjdfstest: checks that failed', ['directory', 'checks', 'strata mount', 'bindfs'], rows);
  const both = targets.includes('bindfs') && targets.includes('strata') && option('only') === undefined;
  console.log(`wrote ${writeResult(both ? 'pjdfstest' : 'pjdfstest-partial', { machine: machineInfo(), suite, names, targets, results })}`);
}

async function runStrata(results: Record<string, Record<string, ScriptResult[]>>, suite: string, names: string[], timeoutS: number): Promise<void> {
  const home = freshDir('pjdfstest-strata-home');
  const mnt = freshDir('pjdfstest-strata-mnt');
  const mount = await startMount(home, mnt);
  try {
    results['strata'] = await runSuite({ name: 'strata', dir: mnt, stop: async () => {} }, suite, names, timeoutS);
  } finally {
    await mount.stop().catch(() => null);
    await run('fusermount', ['-uz', mnt]).catch(() => undefined);
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
