// Benchmarks 2 and 3 of issue 4, through the engine (openLocalEngine, the daemon's path: a local file
// handed to writeFile with its size), in one run:
//  2. A 2 GB dataset: insert one byte at the start; separately overwrite 1 MiB in the middle. New
//     bytes stored by each edit (store growth), against fixed-size 1 MiB sharding (computed: every
//     block after the insert changes). Target: ≤ 3 new shards per edit.
//  3. A 20-version series of a dataset with small edits: the store's total bytes against restic's
//     repository for the same series (restic backup of each version, Debian's restic, same disk).
//     Target: Strata ≤ restic.
// The data is pseudo-random (incompressible), standing in for binary measurement data: restic's zstd
// gains nothing on it, nor would it on most instrument output; a compressible dataset is a different
// comparison (noted in docs/benchmarks.md).
//
//   node dist/bench/dataset-edits.js [--mib 2048] [--series-mib 256] [--versions 20]
import { createWriteStream } from 'node:fs';
import { open, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { openLocalEngine } from '../engine/local.js';
import type { Actor } from '../engine/types.js';
import { BENCH_TMP, freshDir, machineInfo, removeDir, writeResult } from './lib/env.js';
import { pseudoRandomBytes } from './lib/pool.js';
import { MiB, run, timed } from './lib/proc.js';
import { printTable, printTargets } from './lib/table.js';
import { target } from './lib/stats.js';

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i === -1 ? fallback : Number(process.argv[i + 1]);
}

const SIZE_MIB = arg('mib', 2048);
const SERIES_MIB = arg('series-mib', 256);
const VERSIONS = arg('versions', 20);
const actor: Actor = { id: 'bench', kind: 'local', name: 'bench' };

/** Writes `mib` MiB of deterministic pseudo-random bytes to `file` (streamed, 8 MiB at a time). */
async function writeRandom(file: string, mib: number, seed: number): Promise<void> {
  const out = createWriteStream(file);
  for (let i = 0; i < mib; i += 8) {
    const block = pseudoRandomBytes(seed + i, Math.min(8, mib - i) * MiB);
    if (!out.write(block)) await new Promise<void>((resolve) => out.once('drain', () => resolve()));
  }
  await new Promise<void>((resolve, reject) => out.end((error?: Error | null) => (error ? reject(error) : resolve())));
}

/** Copies `src` to `dst`, inserting `insert` at `at` (streamed). */
async function copyWithInsert(src: string, dst: string, at: number, insert: Uint8Array): Promise<void> {
  const input = await open(src, 'r');
  const output = await open(dst, 'w');
  try {
    const buf = Buffer.allocUnsafe(8 * MiB);
    let pos = 0;
    let outPos = 0;
    for (;;) {
      const { bytesRead } = await input.read(buf, 0, buf.length, pos);
      if (bytesRead === 0) break;
      let chunk = buf.subarray(0, bytesRead);
      if (pos <= at && at < pos + bytesRead) {
        const cut = at - pos;
        await output.write(chunk.subarray(0, cut), 0, cut, outPos);
        outPos += cut;
        await output.write(insert, 0, insert.length, outPos);
        outPos += insert.length;
        chunk = chunk.subarray(cut);
      }
      await output.write(chunk, 0, chunk.length, outPos);
      outPos += chunk.length;
      pos += bytesRead;
    }
  } finally {
    await input.close();
    await output.close();
  }
}

async function overwrite(file: string, at: number, bytes: Uint8Array): Promise<void> {
  const handle = await open(file, 'r+');
  try {
    await handle.write(bytes, 0, bytes.length, at);
  } finally {
    await handle.close();
  }
}

async function storeBytes(store: { list(): AsyncIterable<{ size: number }> }): Promise<{ objects: number; bytes: number }> {
  let objects = 0;
  let bytes = 0;
  for await (const object of store.list()) {
    objects += 1;
    bytes += object.size;
  }
  return { objects, bytes };
}

async function duBytes(dir: string): Promise<number> {
  return Number((await run('du', ['-sb', dir])).split('\t')[0]);
}

async function edits2gb(root: string) {
  const base = join(root, 'base.bin');
  await writeRandom(base, SIZE_MIB, 1);
  const size = (await stat(base)).size;
  const local = await openLocalEngine({ home: join(root, 'home') });
  try {
    const project = await local.engine.createProject({ orgId: await firstOrg(local), name: 'bench' });
    await local.engine.trackDataset({ projectId: project.projectId, pattern: 'data.bin', actor });
    const put = (file: string, fileSize: number) =>
      local.engine.writeFile({ projectId: project.projectId, path: 'data.bin', actor, content: { file, size: fileSize } });
    const initialSeconds = await timed(() => put(base, size));
    const afterInitial = await storeBytes(local.store);

    const inserted = join(root, 'inserted.bin');
    await copyWithInsert(base, inserted, 0, Buffer.from([0x2a]));
    const insertSeconds = await timed(() => put(inserted, size + 1));
    const afterInsert = await storeBytes(local.store);

    const overwritten = join(root, 'overwritten.bin');
    await run('cp', [inserted, overwritten]);
    await overwrite(overwritten, Math.floor(size / 2), pseudoRandomBytes(777, MiB));
    const overwriteSeconds = await timed(() => put(overwritten, size + 1));
    const afterOverwrite = await storeBytes(local.store);

    const history = (await local.engine.datasetHistory({ projectId: project.projectId, path: 'data.bin' })).items;
    const fixedBlocks = Math.ceil((size + 1) / MiB);
    return {
      sizeBytes: size,
      initial: { seconds: initialSeconds, mbPerSecond: size / 1e6 / initialSeconds, objects: afterInitial.objects, shards: history[2]?.shardCount ?? null },
      insert: {
        seconds: insertSeconds,
        newShards: history[1]?.newShards ?? null,
        // +1: the new manifest
        newObjects: afterInsert.objects - afterInitial.objects,
        newBytes: afterInsert.bytes - afterInitial.bytes,
        fixedSizeNewBlocks: fixedBlocks,
        fixedSizeNewBytes: size + 1,
      },
      overwrite: {
        seconds: overwriteSeconds,
        newShards: history[0]?.newShards ?? null,
        newObjects: afterOverwrite.objects - afterInsert.objects,
        newBytes: afterOverwrite.bytes - afterInsert.bytes,
        // a 1 MiB overwrite at an arbitrary offset touches two 1 MiB blocks
        fixedSizeNewBlocks: 2,
        fixedSizeNewBytes: 2 * MiB,
      },
    };
  } finally {
    await local.close();
  }
}

async function firstOrg(local: Awaited<ReturnType<typeof openLocalEngine>>): Promise<string> {
  const orgs = await local.repository.access.listOrganizations();
  if (orgs[0]) return orgs[0].orgId;
  const orgId = 'bench-org';
  await local.repository.access.createOrganization({ orgId, name: 'bench', createdAt: new Date().toISOString() });
  return orgId;
}

/** Small edits per version: three 4 KiB overwrites at pseudo-random offsets, and every fifth version a 100-byte insert. */
async function series(root: string) {
  const file = join(root, 'series.bin');
  await writeRandom(file, SERIES_MIB, 5);
  const local = await openLocalEngine({ home: join(root, 'series-home') });
  const repo = join(root, 'restic-repo');
  const resticEnv = { ...process.env, RESTIC_PASSWORD: 'bench', RESTIC_CACHE_DIR: join(root, 'restic-cache') };
  await run('restic', ['init', '--repo', repo], { env: resticEnv });
  let strataSeconds = 0;
  let resticSeconds = 0;
  let logical = 0;
  try {
    const project = await local.engine.createProject({ orgId: await firstOrg(local), name: 'series' });
    await local.engine.trackDataset({ projectId: project.projectId, pattern: 'series.bin', actor });
    let seed = 100;
    for (let v = 0; v < VERSIONS; v++) {
      if (v > 0) {
        const { size } = await stat(file);
        for (let k = 0; k < 3; k++) await overwrite(file, Math.floor(((seed++ * 2654435761) % 4294967296) / 4294967296 * (size - 4096)), pseudoRandomBytes(seed++, 4096));
        if (v % 5 === 0) {
          const next = `${file}.next`;
          await copyWithInsert(file, next, Math.floor(size / 3), pseudoRandomBytes(seed++, 100));
          await run('mv', [next, file]);
        }
      }
      const { size } = await stat(file);
      logical += size;
      strataSeconds += await timed(() => local.engine.writeFile({ projectId: project.projectId, path: 'series.bin', actor, content: { file, size } }));
      resticSeconds += await timed(() => run('restic', ['--repo', repo, 'backup', '--quiet', file], { env: resticEnv }));
    }
    const strata = await storeBytes(local.store);
    const strataDisk = await duBytes(join(root, 'series-home', 'store'));
    const resticBytes = await duBytes(repo);
    return { versions: VERSIONS, datasetBytes: SERIES_MIB * MiB, logicalBytes: logical, strata: { ...strata, diskBytes: strataDisk, seconds: strataSeconds }, restic: { repoBytes: resticBytes, seconds: resticSeconds } };
  } finally {
    await local.close();
  }
}

async function main(): Promise<void> {
  const root = freshDir('dataset-edits');
  try {
    console.log(`dataset edits: ${SIZE_MIB} MiB dataset; series: ${VERSIONS} versions of ${SERIES_MIB} MiB (scratch: ${BENCH_TMP})`);
    const edits = await edits2gb(root);
    printTable(`A ${SIZE_MIB} MiB dataset (stored in ${edits.initial.seconds.toFixed(1)} s, ${edits.initial.mbPerSecond.toFixed(0)} MB/s, ${edits.initial.shards} shards)`, ['edit', 'new shards', 'new objects (incl. manifest)', 'new MB', 'fixed 1 MiB blocks: new', 'fixed: new MB', 'seconds'], [
      ['insert 1 byte at 0', edits.insert.newShards ?? '-', edits.insert.newObjects, (edits.insert.newBytes / 1e6).toFixed(2), edits.insert.fixedSizeNewBlocks, (edits.insert.fixedSizeNewBytes / 1e6).toFixed(0), edits.insert.seconds.toFixed(2)],
      ['overwrite 1 MiB in the middle', edits.overwrite.newShards ?? '-', edits.overwrite.newObjects, (edits.overwrite.newBytes / 1e6).toFixed(2), edits.overwrite.fixedSizeNewBlocks, (edits.overwrite.fixedSizeNewBytes / 1e6).toFixed(1), edits.overwrite.seconds.toFixed(2)],
    ]);
    const s = await series(root);
    printTable(`${s.versions} versions of a ${SERIES_MIB} MiB dataset with small edits (${(s.logicalBytes / 1e6).toFixed(0)} MB logical)`, ['store', 'bytes (objects)', 'bytes on disk (du -sb)', 'seconds (all versions)'], [
      ['Strata', `${(s.strata.bytes / 1e6).toFixed(1)} MB (${s.strata.objects})`, `${(s.strata.diskBytes / 1e6).toFixed(1)} MB`, s.strata.seconds.toFixed(1)],
      ['restic 0.14 repo', '-', `${(s.restic.repoBytes / 1e6).toFixed(1)} MB`, s.restic.seconds.toFixed(1)],
    ]);
    const checks = [
      target('insert 1 byte: new shards', edits.insert.newShards ?? Number.POSITIVE_INFINITY, '<=', 3),
      target('overwrite 1 MiB: new shards', edits.overwrite.newShards ?? Number.POSITIVE_INFINITY, '<=', 3),
      target('series: Strata store bytes ÷ restic repo bytes', s.strata.diskBytes / s.restic.repoBytes, '<=', 1),
    ];
    printTargets(checks);
    console.log(`result: ${writeResult('dataset-edits', { machine: machineInfo(), benchTmp: BENCH_TMP, edits, series: s, targets: checks })}`);
  } finally {
    removeDir(root);
  }
}

await main();
