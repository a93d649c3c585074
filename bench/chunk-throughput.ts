// Benchmark: the dataset chunker (fastcdc-gear64-v1, engine/datasets/).
//  1. Throughput on one core: chunk + BLAKE3 of every chunk over 1 GiB of pseudo-random bytes, in memory
//     (native, pure JS, BLAKE3-only baseline) and from a file in page cache through chunkFile (its worker
//     thread also hashes the whole file). Target >= 1 GB/s.
//  2. The "2 GB dataset" experiment at the chunker level: a 2 GiB pseudo-random file, then (a) one byte
//     inserted at the start, (b) 1 MiB overwritten in the middle. New shards and bytes against the
//     original's chunk set, next to fixed-size 1 MiB sharding. Target <= 3 new shards per edit.
// Data are AES-128-CTR keystreams (deterministic, ~3 GB/s to produce), streamed to BENCH_TMP for the
// files: the 2 GiB never sits in memory.
import { Blake3Hasher } from '@napi-rs/blake-hash';
import { createCipheriv } from 'node:crypto';
import { closeSync, copyFileSync, openSync, readSync, statSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { DEFAULT_CHUNKER_PARAMS } from '../engine/datasets/chunker-params.js';
import { type ChunkerImplementation, createChunker, nativeChunkerPath } from '../engine/datasets/gear-chunker.js';
import { type ChunkFileResult, chunkFile } from '../engine/storage/chunk-file.js';
import { BENCH_TMP, freshDir, machineInfo, removeDir, selected, writeResult } from './lib/env.js';
import { MiB } from './lib/proc.js';
import { mapSummary, round3, type Summary, summarize, target } from './lib/stats.js';
import { printTable, printTargets, spread } from './lib/table.js';

const GB = 1e9;
const ROUNDS = Number(process.env['BENCH_ROUNDS'] ?? 3);
const THROUGHPUT_BYTES = Number(process.env['BENCH_CHUNK_MIB'] ?? 1024) * MiB;
/** The JS scan runs at ~0.15 GB/s: a quarter of the data says as much in a quarter of the time. */
const JS_BYTES = THROUGHPUT_BYTES / 4;
const DATASET_BYTES = Number(process.env['BENCH_DATASET_MIB'] ?? 2048) * MiB;
/** Slice size fed to the chunker and hashers in memory: what chunkFile's worker reads per block. */
const SLICE = MiB;
const DIR = join(BENCH_TMP, 'chunk-throughput');

function keystream(seed: number) {
  const key = Buffer.alloc(16);
  key.writeUInt32LE(seed);
  return createCipheriv('aes-128-ctr', key, Buffer.alloc(16));
}

/** Writes `size` keystream bytes of `seed` to `file` (prefixed by `prefix`), 4 MiB at a time. */
function writeStream(file: string, seed: number, size: number, prefix?: Uint8Array): void {
  const cipher = keystream(seed);
  const zeros = Buffer.alloc(4 * MiB);
  const fd = openSync(file, 'w');
  try {
    if (prefix !== undefined) writeSync(fd, prefix);
    for (let done = 0; done < size; ) {
      const n = Math.min(zeros.length, size - done);
      const bytes = cipher.update(zeros.subarray(0, n));
      for (let at = 0; at < bytes.length; ) at += writeSync(fd, bytes, at, bytes.length - at);
      done += n;
    }
  } finally {
    closeSync(fd);
  }
}

/** Reads a file once (untimed) so the timed pass reads it from page cache (see ingest-large.ts). */
function warm(file: string): void {
  const buf = Buffer.allocUnsafe(4 * MiB);
  const fd = openSync(file, 'r');
  while (readSync(fd, buf, 0, buf.length, null) > 0);
  closeSync(fd);
}

/** BLAKE3 of each fixed-size 1 MiB shard of a file. */
function fixedShards(file: string): string[] {
  const buf = Buffer.allocUnsafe(MiB);
  const fd = openSync(file, 'r');
  const out: string[] = [];
  try {
    for (;;) {
      let n = 0;
      while (n < MiB) {
        const got = readSync(fd, buf, n, MiB - n, null);
        if (got === 0) break;
        n += got;
      }
      if (n === 0) break;
      out.push(new Blake3Hasher().update(buf.subarray(0, n)).digest('hex'));
      if (n < MiB) break;
    }
  } finally {
    closeSync(fd);
  }
  return out;
}

interface Trial {
  seconds: number;
  /** process CPU seconds (all threads) during the trial */
  cpuSeconds: number;
}

function timeSync(task: () => void): Trial {
  const cpu = process.cpuUsage();
  const start = process.hrtime.bigint();
  task();
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  const used = process.cpuUsage(cpu);
  return { seconds, cpuSeconds: (used.user + used.system) / 1e6 };
}

async function timeAsync(task: () => Promise<unknown>): Promise<Trial> {
  const cpu = process.cpuUsage();
  const start = process.hrtime.bigint();
  await task();
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  const used = process.cpuUsage(cpu);
  return { seconds, cpuSeconds: (used.user + used.system) / 1e6 };
}

/** Chunks what it is fed; optionally hashes every chunk and the whole input. */
function chunkSink(implementation: ChunkerImplementation, hashChunks: boolean, hashWhole: boolean) {
  const chunker = createChunker(DEFAULT_CHUNKER_PARAMS, { implementation });
  const whole = new Blake3Hasher();
  let piece = new Blake3Hasher();
  let count = 0;
  let pos = 0;
  return {
    feed(view: Buffer): void {
      if (hashWhole) whole.update(view);
      let from = 0;
      for (const end of chunker.push(view)) {
        if (hashChunks) {
          piece.update(view.subarray(from, end - pos));
          piece.digest('hex');
          piece = new Blake3Hasher();
        }
        from = end - pos;
        count++;
      }
      if (hashChunks && from < view.length) piece.update(view.subarray(from));
      pos += view.length;
    },
    end(): number {
      count += chunker.finish().length;
      if (hashChunks) piece.digest('hex');
      if (hashWhole) whole.digest('hex');
      return count;
    },
  };
}

/** `data` fed in SLICE pieces. */
function chunkInMemory(data: Buffer, implementation: ChunkerImplementation, hashChunks: boolean, hashWhole: boolean): number {
  const sink = chunkSink(implementation, hashChunks, hashWhole);
  for (let pos = 0; pos < data.length; pos += SLICE) sink.feed(data.subarray(pos, pos + SLICE));
  return sink.end();
}

/** The file read in SLICE blocks on this thread: chunkFile's loop without the worker and the file hash. */
function chunkFromFile(file: string, hashWhole: boolean): number {
  const sink = chunkSink('native', true, hashWhole);
  const buf = Buffer.allocUnsafe(SLICE);
  const fd = openSync(file, 'r');
  try {
    for (;;) {
      const n = readSync(fd, buf, 0, buf.length, null);
      if (n === 0) break;
      sink.feed(n === buf.length ? buf : buf.subarray(0, n));
    }
  } finally {
    closeSync(fd);
  }
  return sink.end();
}

/** BLAKE3 only, one hasher per fixed 1 MiB shard: the cost of hashing without chunking. */
function hashOnly(data: Buffer): number {
  let count = 0;
  for (let pos = 0; pos < data.length; pos += SLICE) {
    new Blake3Hasher().update(data.subarray(pos, pos + SLICE)).digest('hex');
    count++;
  }
  return count;
}

interface Variant {
  name: string;
  bytes: number;
  run: () => Promise<Trial>;
}

interface Row {
  variant: string;
  bytes: number;
  seconds: Summary;
  gbps: Summary;
  /** CPU seconds ÷ wall seconds: 1.0 = one core busy */
  cores: Summary;
  /**
   * Bytes per CPU-second (all threads): the one-core figure that other load on this shared 2-core
   * machine does not distort (wall-clock GB/s drops whenever another process takes the core).
   */
  gbPerCpuSecond: Summary;
}

async function throughput(file: string): Promise<Row[]> {
  console.log(`  generating ${THROUGHPUT_BYTES / MiB} MiB in memory and in ${file}`);
  const data = keystream(1).update(Buffer.alloc(THROUGHPUT_BYTES));
  writeStream(file, 1, THROUGHPUT_BYTES);
  const jsData = data.subarray(0, JS_BYTES);
  const variants: Variant[] = [
    { name: 'BLAKE3 only (1 MiB shards), memory', bytes: data.length, run: async () => timeSync(() => hashOnly(data)) },
    { name: 'native chunk only, memory', bytes: data.length, run: async () => timeSync(() => chunkInMemory(data, 'native', false, false)) },
    { name: 'native chunk + chunk BLAKE3, memory', bytes: data.length, run: async () => timeSync(() => chunkInMemory(data, 'native', true, false)) },
    {
      name: 'native chunk + chunk + file BLAKE3, memory',
      bytes: data.length,
      run: async () => timeSync(() => chunkInMemory(data, 'native', true, true)),
    },
    { name: 'JS chunk + chunk BLAKE3, memory', bytes: jsData.length, run: async () => timeSync(() => chunkInMemory(jsData, 'js', true, false)) },
    {
      name: 'native read + chunk + chunk BLAKE3, page cache',
      bytes: data.length,
      run: async () => {
        warm(file);
        return timeSync(() => chunkFromFile(file, false));
      },
    },
    {
      name: 'chunkFile native, page cache (1 MiB blocks)',
      bytes: data.length,
      run: () => {
        warm(file);
        return timeAsync(() => chunkFile(file, DEFAULT_CHUNKER_PARAMS, { implementation: 'native' }));
      },
    },
    {
      name: 'chunkFile native, page cache (4 MiB blocks)',
      bytes: data.length,
      run: () => {
        warm(file);
        return timeAsync(() => chunkFile(file, DEFAULT_CHUNKER_PARAMS, { implementation: 'native', blockBytes: 4 * MiB }));
      },
    },
  ];
  const samples = new Map<string, Trial[]>(variants.map((v) => [v.name, []]));
  for (let round = 0; round < ROUNDS; round++) {
    for (const variant of variants) {
      if (!selected(variant.name)) continue;
      const trial = await variant.run();
      samples.get(variant.name)!.push(trial);
      console.log(`  round ${round + 1} ${variant.name}: ${trial.seconds.toFixed(3)} s, ${(variant.bytes / GB / trial.seconds).toFixed(2)} GB/s, ${trial.cpuSeconds.toFixed(2)} CPU s`);
    }
  }
  return variants
    .filter((v) => samples.get(v.name)!.length > 0)
    .map((v) => {
      const trials = samples.get(v.name)!;
      const seconds = summarize(trials.map((t) => t.seconds));
      return {
        variant: v.name,
        bytes: v.bytes,
        seconds,
        gbps: mapSummary(seconds, (s) => v.bytes / GB / s),
        cores: summarize(trials.map((t) => t.cpuSeconds / t.seconds)),
        gbPerCpuSecond: summarize(trials.map((t) => v.bytes / GB / t.cpuSeconds)),
      };
    });
}

interface EditRow {
  edit: string;
  cdcShards: number;
  cdcNewShards: number;
  cdcNewBytes: number;
  fixedShards: number;
  fixedNewShards: number;
  fixedNewBytes: number;
  chunkFileSeconds: number;
}

function newOf(original: Set<string>, chunks: Array<{ hash: string; size: number }>): { shards: number; bytes: number } {
  const fresh = chunks.filter((c) => !original.has(c.hash));
  return { shards: fresh.length, bytes: fresh.reduce((sum, c) => sum + c.size, 0) };
}

/**
 * More edits than the two headline ones, for the distribution: EDIT_SAMPLES 1 MiB overwrites and 1-byte
 * inserts at spread, unaligned offsets. Each is re-chunked from the original's last cut before the edit
 * (the chunker restarts at every cut, so from there on it sees what a full pass would) over a window
 * that must end resynchronised with the original.
 */
const EDIT_SAMPLES = 32;
const WINDOW = 32 * MiB;

function editDistribution(file: string, size: number, chunks: ChunkFileResult['chunks'], known: Set<string>) {
  const result: Record<'overwrite 1 MiB' | 'insert 1 byte', number[]> = { 'overwrite 1 MiB': [], 'insert 1 byte': [] };
  const originalEnds = new Set(chunks.map((c) => c.offset + c.size));
  const fd = openSync(file, 'r');
  try {
    for (let k = 0; k < EDIT_SAMPLES; k++) {
      const at = Math.floor(((k + 0.5) * size) / EDIT_SAMPLES) + 12_345 * k;
      const start = chunks.findLast((c) => c.offset <= at)!.offset;
      const window = Buffer.allocUnsafe(Math.min(WINDOW, size - start));
      readSync(fd, window, 0, window.length, start);
      const edits = {
        'overwrite 1 MiB': Buffer.concat([window.subarray(0, at - start), keystream(100 + k).update(Buffer.alloc(MiB)), window.subarray(at - start + MiB)]),
        'insert 1 byte': Buffer.concat([window.subarray(0, at - start), Buffer.from([k]), window.subarray(at - start)]),
      };
      for (const [name, bytes] of Object.entries(edits) as Array<[keyof typeof result, Buffer]>) {
        const shift = bytes.length - window.length;
        const chunker = createChunker(DEFAULT_CHUNKER_PARAMS, { implementation: 'native' });
        const ends = [...chunker.push(bytes), ...(start + window.length === size ? chunker.finish() : [])];
        let fresh = 0;
        let from = 0;
        let resynced = false;
        for (const end of ends) {
          if (!known.has(`blake3:${new Blake3Hasher().update(bytes.subarray(from, end)).digest('hex')}`)) fresh++;
          from = end;
          // Past the edit, back on one of the original's cuts: everything after is the original's.
          if (start + end - shift > at + MiB && originalEnds.has(start + end - shift)) {
            resynced = true;
            break;
          }
        }
        if (!resynced) throw new Error(`${name} at ${at}: not resynchronised within ${WINDOW / MiB} MiB`);
        result[name].push(fresh);
      }
    }
  } finally {
    closeSync(fd);
  }
  return Object.fromEntries(
    Object.entries(result).map(([name, counts]) => [
      name,
      { edits: counts.length, atMost3: counts.filter((c) => c <= 3).length, mean: round3(counts.reduce((a, b) => a + b, 0) / counts.length), max: Math.max(...counts), counts },
    ]),
  );
}

async function dataset(dir: string) {
  const original = join(dir, 'original.bin');
  const inserted = join(dir, 'insert-1-byte-at-start.bin');
  const overwritten = join(dir, 'overwrite-1MiB-in-middle.bin');
  console.log(`  writing the ${DATASET_BYTES / MiB} MiB dataset and its two edits to ${dir}`);
  writeStream(original, 2, DATASET_BYTES);
  writeStream(inserted, 2, DATASET_BYTES, Buffer.from([0x42]));
  copyFileSync(original, overwritten);
  const fd = openSync(overwritten, 'r+');
  writeSync(fd, keystream(3).update(Buffer.alloc(MiB)), 0, MiB, Math.floor(DATASET_BYTES / 2));
  closeSync(fd);

  const chunked = async (file: string): Promise<{ result: ChunkFileResult; seconds: number }> => {
    warm(file);
    const start = process.hrtime.bigint();
    const result = await chunkFile(file, DEFAULT_CHUNKER_PARAMS, { implementation: 'native' });
    return { result, seconds: Number(process.hrtime.bigint() - start) / 1e9 };
  };
  const base = await chunked(original);
  if (base.result.size !== DATASET_BYTES) throw new Error(`chunked ${base.result.size} bytes, expected ${DATASET_BYTES}`);
  const baseHashes = new Set(base.result.chunks.map((c) => c.hash));
  const baseFixed = new Set(fixedShards(original));
  const rows: EditRow[] = [];
  for (const [edit, file] of [
    ['insert 1 byte at the start', inserted],
    ['overwrite 1 MiB in the middle', overwritten],
  ] as const) {
    const cdc = await chunked(file);
    const fresh = newOf(baseHashes, cdc.result.chunks);
    const fixed = fixedShards(file);
    const fixedFresh = fixed.filter((h) => !baseFixed.has(h)).length;
    const size = statSync(file).size;
    rows.push({
      edit,
      cdcShards: cdc.result.chunks.length,
      cdcNewShards: fresh.shards,
      cdcNewBytes: fresh.bytes,
      fixedShards: fixed.length,
      fixedNewShards: fixedFresh,
      // every new fixed shard is 1 MiB except possibly the last one
      fixedNewBytes: Math.min(fixedFresh * MiB, size),
      chunkFileSeconds: round3(cdc.seconds),
    });
    console.log(`  ${edit}: ${fresh.shards} new shards (${(fresh.bytes / MiB).toFixed(2)} MiB); fixed 1 MiB: ${fixedFresh} new`);
  }
  const distribution = editDistribution(original, DATASET_BYTES, base.result.chunks, baseHashes);
  return {
    rows,
    distribution,
    original: { shards: base.result.chunks.length, meanShardBytes: Math.round(DATASET_BYTES / base.result.chunks.length), seconds: round3(base.seconds) },
  };
}

async function main(): Promise<void> {
  const machine = machineInfo();
  if (nativeChunkerPath() === null) throw new Error('the native chunker is not built (native/chunker); run scripts/env.sh first');
  console.log(`chunk-throughput: ${THROUGHPUT_BYTES / MiB} MiB throughput data, ${DATASET_BYTES / MiB} MiB dataset, ${ROUNDS} rounds, scratch ${DIR}`);
  const dir = freshDir('chunk-throughput');
  try {
    const rows = await throughput(join(dir, 'throughput.bin'));
    printTable(
      `Chunk throughput, one core, ${DEFAULT_CHUNKER_PARAMS.algorithm} 256 KiB/1 MiB/4 MiB, median (min–max) of ${ROUNDS}`,
      ['variant', 'MiB', 'seconds', 'GB/s', 'GB per CPU-s', 'CPU ÷ wall'],
      rows.map((r) => [r.variant, r.bytes / MiB, spread(r.seconds), spread(r.gbps), spread(r.gbPerCpuSecond), spread(r.cores)]),
    );
    removeDir(join(dir, 'throughput.bin'));
    const edits = await dataset(dir);
    printTable(
      `${DATASET_BYTES / MiB} MiB dataset: original ${edits.original.shards} shards (mean ${(edits.original.meanShardBytes / MiB).toFixed(2)} MiB, chunkFile ${edits.original.seconds} s)`,
      ['edit', 'CDC new shards', 'CDC new MiB', 'fixed 1 MiB new shards', 'fixed new MiB', 'chunkFile s'],
      edits.rows.map((r) => [r.edit, r.cdcNewShards, r.cdcNewBytes / MiB, r.fixedNewShards, r.fixedNewBytes / MiB, r.chunkFileSeconds]),
    );
    printTable(
      `${EDIT_SAMPLES} edits of each kind at spread, unaligned offsets: new CDC shards per edit`,
      ['edit', 'edits', '<= 3 new', 'mean', 'max'],
      Object.entries(edits.distribution).map(([name, d]) => [name, d.edits, d.atMost3, d.mean, d.max]),
    );
    const row = (name: string) => rows.find((r) => r.variant === name);
    const targetRows = [
      ['native chunk + chunk BLAKE3, memory', 'chunk + chunk BLAKE3, memory'],
      ['native read + chunk + chunk BLAKE3, page cache', 'read + chunk + chunk BLAKE3, page cache'],
      ['chunkFile native, page cache (1 MiB blocks)', 'chunkFile (+ file BLAKE3), page cache'],
    ] as const;
    const throughputTargets = targetRows.flatMap(([name, label]) => [
      target(`${label}: wall GB/s`, row(name)?.gbps.median ?? Number.NaN, '>=', 1),
      target(`${label}: GB per CPU-second`, row(name)?.gbPerCpuSecond.median ?? Number.NaN, '>=', 1),
    ]);
    const targets = [
      ...throughputTargets,
      ...edits.rows.map((r) => target(`${r.edit}: new CDC shards`, r.cdcNewShards, '<=', 3)),
    ];
    printTargets(targets);
    const file = writeResult('chunk-throughput', {
      benchmark: 'chunk-throughput',
      machine,
      params: {
        chunker: DEFAULT_CHUNKER_PARAMS,
        throughputBytes: THROUGHPUT_BYTES,
        jsBytes: JS_BYTES,
        datasetBytes: DATASET_BYTES,
        sliceBytes: SLICE,
        rounds: ROUNDS,
        gbIs: '1e9 bytes',
        data: 'AES-128-CTR keystream (pseudo-random)',
      },
      throughput: rows,
      dataset: edits,
      targets,
    });
    console.log(`\nresult: ${file}`);
  } finally {
    if (process.env['BENCH_KEEP'] !== '1') removeDir(dir);
  }
}

await main();
