// Crash rounds for sync (issue 14: "kill -9 of a daemon mid-drain and of the server mid-upload; repeat
// a few times in the test, more in bench/"). Real processes on loopback (test/sync-harness.ts): A
// writes a round of files (small ones and one 16 MiB file, sent whole), and once it is pushing, after
// a random delay, A's daemon, the server, or both are killed with SIGKILL and started again. B stays
// up and pulls throughout. After the last round: the time until both are in sync, then what must hold
// — both trees equal to what A wrote, exactly one version per file on the server however often it
// was sent, and `strata fsck` clean on all three homes. Any failure exits 1.
//
//   node dist/bench/sync-crash.js [--rounds 12] [--files 300]
// Result: bench/results/sync-crash.json.

import { randomBytes } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { allInSync, fsckFailures, openSyncWorld, treeOf, type Workstation } from '../test/sync-harness.js';
import { BENCH_TMP, machineInfo, writeResult } from './lib/env.js';
import { timed } from './lib/proc.js';
import { sleep } from './lib/sync-world.js';
import { printTable } from './lib/table.js';

const arg = (name: string, fallback: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i === -1 ? fallback : Number(process.argv[i + 1]);
};

type Kill = 'daemon' | 'server' | 'both';
const KILLS: Kill[] = ['daemon', 'server', 'both'];

async function pushing(a: Workstation, deadlineMs: number): Promise<boolean> {
  const deadline = Date.now() + deadlineMs;
  while (Date.now() < deadline) {
    const [project] = await a.syncStatus().catch(() => []);
    if (project !== undefined && (project.sync.pushed > 0 || project.sync.uploadedBytes > 0)) return true;
    await sleep(50);
  }
  return false;
}

async function main(): Promise<void> {
  const rounds = arg('rounds', 12);
  const files = arg('files', 300);
  process.env['TMPDIR'] = BENCH_TMP;
  await mkdir(BENCH_TMP, { recursive: true });
  const world = await openSyncWorld('sync-crash-');
  const failures: string[] = [];
  const killed: Array<{ round: number; kill: Kill; afterMs: number; wasPushing: boolean }> = [];
  let convergeSeconds = Number.NaN;
  try {
    const a = world.workstation('wsA');
    const b = world.workstation('wsB');
    await mkdir(a.dir, { recursive: true });
    await a.start();
    await b.start();
    const init = await a.cli(['init', a.dir, '--server', world.url, '--project', world.projectId]);
    if (init.code !== 0) throw new Error(`init: ${init.stderr}`);
    const clone = await b.cli(['clone', world.url, world.projectId, b.dir]);
    if (clone.code !== 0) throw new Error(`clone: ${clone.stderr}`);
    const expected: Record<string, string> = {};
    for (let round = 0; round < rounds; round++) {
      const dir = join(a.dir, `r${round}`);
      await mkdir(dir);
      for (let i = 0; i < files; i++) {
        const text = `round ${round} file ${i}\n${'x'.repeat((i * 7919) % 3000)}\n`;
        await writeFile(join(dir, `f${i}.txt`), text);
        expected[`r${round}/f${i}.txt`] = text;
      }
      // Hex text, so treeOf (utf8) compares it exactly.
      const big = randomBytes(8 * 1024 * 1024).toString('hex');
      await writeFile(join(dir, 'big.txt'), big);
      expected[`r${round}/big.txt`] = big;
      const wasPushing = await pushing(a, 30_000);
      const afterMs = Math.floor(Math.random() * 400);
      await sleep(afterMs);
      const kill = KILLS[round % KILLS.length]!;
      if (kill !== 'server') await a.kill();
      if (kill !== 'daemon') {
        await world.stopServer('SIGKILL');
        await world.startServer();
      }
      if (kill !== 'server') await a.start();
      killed.push({ round, kill, afterMs, wasPushing });
      console.error(`round ${round}: killed ${kill} ${afterMs} ms after A started pushing${wasPushing ? '' : ' (it had not yet)'}`);
    }
    convergeSeconds = await timed(() => allInSync([a, b], 600));
    const [treeA, treeB] = [await treeOf(a.dir), await treeOf(b.dir)];
    const mismatched = Object.keys(expected).filter((path) => treeA[path] !== expected[path] || treeB[path] !== expected[path]);
    if (mismatched.length > 0) failures.push(`${mismatched.length} files differ from what A wrote (first: ${mismatched[0]})`);
    if (JSON.stringify(treeA) !== JSON.stringify(treeB)) failures.push('the trees of A and B differ');
    const history = await world.serverCli(['history', '--all', '--json', '--project', world.projectId]);
    const versions = (JSON.parse(history.stdout) as { items: Array<{ path: string }> }).items;
    const perPath = new Map<string, number>();
    for (const v of versions) perPath.set(v.path, (perPath.get(v.path) ?? 0) + 1);
    const duplicated = [...perPath].filter(([path, n]) => path in expected && n !== 1);
    if (duplicated.length > 0) failures.push(`${duplicated.length} files have more than one version on the server (first: ${duplicated[0]![0]} × ${duplicated[0]![1]})`);
    const missing = Object.keys(expected).filter((path) => !perPath.has(path));
    if (missing.length > 0) failures.push(`${missing.length} files have no version on the server`);
    failures.push(...(await fsckFailures(world, [a, b])));
  } finally {
    await world.dispose();
  }
  const result = { rounds, filesPerRound: files + 1, kills: killed, convergeSeconds, failures };
  printTable(`sync crash rounds: ${rounds} rounds of ${files} small files + one 16 MiB file`, ['kills (daemon / server / both)', 'in sync after the last restart', 'failures'], [
    [KILLS.map((k) => killed.filter((x) => x.kill === k).length).join(' / '), `${convergeSeconds.toFixed(1)} s`, failures.length === 0 ? 'none' : failures.join('; ')],
  ]);
  console.log(`wrote ${writeResult('sync-crash', { machine: machineInfo(), ...result })}`);
  if (failures.length > 0) process.exit(1);
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
