// The git peer of snapshot-100k, for context: commit a 100k-file tree, change it the same way as the
// Strata side, and time `git checkout` of the old commit (and back, untimed, to repeat).
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { freshDir, removeDir } from './env.js';
import { git } from './git.js';
import { settleDisk, timed } from './proc.js';
import { type Summary, summarize } from './stats.js';

export interface GitPeer {
  treeWriteSeconds: number;
  /** `git add -A && git commit` of the whole tree (one sample: it is the slow part of this benchmark) */
  commitMs: Summary;
  checkoutMs: Summary;
  worstCheckoutMs: Summary;
}

interface Shape {
  files: number;
  rounds: number;
  pathOf(i: number): string;
  contentOf(i: number, rev: number): Buffer;
  changeSet(round: number): { modify: number[]; remove: number[]; add: number[] };
}

export async function gitSnapshotPeer(shape: Shape): Promise<GitPeer> {
  const repo = freshDir('snapshot-git');
  await git(repo, ['init', '-q']);
  const write = (i: number, rev: number) => {
    const abs = join(repo, shape.pathOf(i));
    mkdirSync(dirname(abs), { recursive: true });
    writeFileSync(abs, shape.contentOf(i, rev));
  };
  const commit = async (message: string) => {
    await git(repo, ['add', '-A']);
    await git(repo, ['commit', '-q', '-m', message]);
    return (await git(repo, ['rev-parse', 'HEAD'])).trim();
  };
  const all = Array.from({ length: shape.files }, (_, i) => i);
  const treeWriteSeconds = await timed(async () => {
    for (const i of all) write(i, 0);
  });
  await settleDisk();
  let first = '';
  const commitSeconds = await timed(async () => {
    first = await commit('s1');
  });
  console.log(`  git: add+commit of ${shape.files} files ${(commitSeconds * 1000).toFixed(0)} ms`);

  const set = shape.changeSet(0);
  for (const i of set.modify) write(i, 1);
  for (const i of set.remove) rmSync(join(repo, shape.pathOf(i)));
  for (const i of set.add) write(i, 1);
  const changed = await commit('s2');
  const checkout = await alternate(repo, first, changed, shape.rounds);
  console.log(`  git: checkout after ${set.modify.length * 3} changes ${checkout.map((s) => (s * 1000).toFixed(0)).join(', ')} ms`);

  await git(repo, ['checkout', '-q', first]);
  for (const i of all) write(i, 100);
  const allChanged = await commit('s3');
  // One sample: each checkout rewrites all 100,000 files (~20 s here), and this is context, not a target.
  const worst = await alternate(repo, first, allChanged, 1);
  console.log(`  git: checkout after all changed ${worst.map((s) => (s * 1000).toFixed(0)).join(', ')} ms`);
  removeDir(repo);
  const ms = (s: number[]) => summarize(s.map((x) => x * 1000));
  return { treeWriteSeconds, commitMs: ms([commitSeconds]), checkoutMs: ms(checkout), worstCheckoutMs: ms(worst) };
}

/** HEAD is at `current`: time `checkout old`, then go back (untimed), `rounds` times. */
async function alternate(repo: string, old: string, current: string, rounds: number): Promise<number[]> {
  const samples: number[] = [];
  for (let round = 0; round < rounds; round++) {
    await settleDisk();
    samples.push(await timed(() => git(repo, ['checkout', '-q', old])));
    if (round < rounds - 1) await git(repo, ['checkout', '-q', current]);
  }
  return samples;
}
