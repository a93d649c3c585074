// The dataset chunker: the native addon (native/chunker, built by scripts/env.sh) when its binary is
// there, else the pure-TypeScript twin. Both implement fastcdc-gear64-v1 and cut identically; the addon
// is what makes chunk + BLAKE3 reach >= 1 GB/s on one core (bench/chunk-throughput.ts): the JS scan
// runs at a fraction of the native ~2.2 GB/s.
//
// The fallback happens only when the .node file is absent (a checkout whose build step was skipped).
// A binary that exists but does not load, or implements another algorithm, is an installation fault
// and throws: silently cutting at JS speed, or cutting differently, would be worse.
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { CHUNKER_ALGORITHM, type ChunkerParams, chunkerParams } from './chunker-params.js';
import { JsGearChunker } from './gear-chunker-js.js';

export type ChunkerImplementation = 'native' | 'js';

/** A streaming chunker. Offsets are absolute in the stream; a chunk may span any number of pushes. */
export interface ContentChunker {
  readonly implementation: ChunkerImplementation;
  /** Feed the next bytes; returns the end offsets of the chunks they closed (ascending). */
  push(bytes: Uint8Array): number[];
  /** End of input: the end offset of the last, partial chunk if any; the chunker then restarts at 0. */
  finish(): number[];
}

interface NativeChunkerInstance {
  push(bytes: Uint8Array): number[];
  finish(): number[];
}

interface NativeAddon {
  algorithm: string;
  Chunker: new (minSize: number, avgSize: number, maxSize: number) => NativeChunkerInstance;
}

const ADDON_FILE = 'native/chunker/build/Release/strata_chunker.node';

/**
 * Absolute path of the built addon, or null when it is not built. This module runs from the sources
 * (engine/datasets/, under vitest) or from dist/engine/datasets/, so the repository root is two or
 * three levels up.
 */
export function nativeChunkerPath(): string | null {
  const require = createRequire(import.meta.url);
  for (const up of ['../../', '../../../']) {
    const candidate = fileURLToPath(new URL(up + ADDON_FILE, import.meta.url));
    try {
      return require.resolve(candidate);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'MODULE_NOT_FOUND') throw error;
    }
  }
  return null;
}

/** URL of the JS implementation's module (.ts under vitest, .js under dist/), for worker threads. */
export function jsChunkerModuleUrl(): string {
  return new URL(import.meta.url.endsWith('.ts') ? './gear-chunker-js.ts' : './gear-chunker-js.js', import.meta.url).href;
}

/** Which implementation createChunker() uses by default: 'native' when the addon is built. */
export function chunkerImplementation(): ChunkerImplementation {
  return nativeChunkerPath() === null ? 'js' : 'native';
}

/**
 * Load the addon at `path` (from nativeChunkerPath()) and check it implements this algorithm. Node
 * caches the loaded module, so calling this per chunker costs a map lookup.
 */
export function loadNativeChunker(path: string): NativeAddon {
  const addon = createRequire(import.meta.url)(path) as NativeAddon;
  if (addon.algorithm !== CHUNKER_ALGORITHM) {
    throw new Error(`${path} implements chunker algorithm "${addon.algorithm}", expected "${CHUNKER_ALGORITHM}"; rebuild it (scripts/env.sh)`);
  }
  return addon;
}

/**
 * A new chunker for `params` (validated: TypeError on misuse). `implementation` forces one side (tests
 * and benchmarks compare them); asking for 'native' when the addon is not built is a TypeError.
 */
export function createChunker(params: ChunkerParams, options: { implementation?: ChunkerImplementation } = {}): ContentChunker {
  const { minSize, avgSize, maxSize } = chunkerParams(params);
  const path = options.implementation === 'js' ? null : nativeChunkerPath();
  if (path === null) {
    if (options.implementation === 'native') throw new TypeError(`the native chunker is not built (${ADDON_FILE}); run scripts/env.sh`);
    const js = new JsGearChunker(minSize, avgSize, maxSize);
    return { implementation: 'js', push: (bytes) => js.push(bytes), finish: () => js.finish() };
  }
  const native = new (loadNativeChunker(path).Chunker)(minSize, avgSize, maxSize);
  return { implementation: 'native', push: (bytes) => native.push(bytes), finish: () => native.finish() };
}

/** Chunk boundaries of bytes already in memory, as [offset, size] pairs in order. */
export function chunkBytes(
  data: Uint8Array,
  params: ChunkerParams,
  options: { implementation?: ChunkerImplementation } = {},
): Array<{ offset: number; size: number }> {
  const chunker = createChunker(params, options);
  const ends = [...chunker.push(data), ...chunker.finish()];
  let offset = 0;
  return ends.map((end) => {
    const chunk = { offset, size: end - offset };
    offset = end;
    return chunk;
  });
}
