// cli/heap-flags.ts: a process that moves bulk bytes through short-lived buffers (a 500 MiB clone: the
// server's 1 MiB file reads, the daemon's 64 KiB socket reads) must not run a mark-compact of its
// whole heap every few megabytes of them. Measured in a child process, as the compiled CLI sets it.
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { EXTERNAL_MEMORY_FLAG, heapFlagFor } from '../cli/heap-flags.js';
import { REPO } from './cli-harness.js';

const run = promisify(execFile);
const HEAP_FLAGS = pathToFileURL(join(REPO, 'dist', 'cli', 'heap-flags.js')).href;

// A heap that is kept (50,000 small objects), and 1 GiB allocated in 64 KiB buffers of which at most
// 16 are alive at once, yielding to the event loop as a socket's reader does. Prints the number of
// full collections.
const CHILD = `
import { constants, PerformanceObserver } from 'node:perf_hooks';
if (process.argv[1] === 'apply') (await import(${JSON.stringify(HEAP_FLAGS)})).applyHeapFlags();
let majors = 0;
new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) if (entry.detail?.kind === constants.NODE_PERFORMANCE_GC_MAJOR) majors++;
}).observe({ entryTypes: ['gc'] });
const kept = [];
for (let i = 0; i < 50000; i++) kept.push({ i, name: 'entry ' + i, pair: [i, -i] });
let alive = [];
for (let i = 0; i < 16384; i++) {
  alive.push(Buffer.allocUnsafe(64 * 1024).fill(i & 255));
  if (alive.length === 16) alive = [];
  if (i % 64 === 63) await new Promise((resolve) => setImmediate(resolve));
}
await new Promise((resolve) => setTimeout(resolve, 50));
process.stdout.write(JSON.stringify({ majors, kept: kept.length }));
`;

async function majorCollections(apply: boolean): Promise<number> {
  // bin/strata's daemon flags: the same young generation as the processes this is for.
  const args = ['--max-semi-space-size=4', '--input-type=module', '-e', CHILD, ...(apply ? ['apply'] : [])];
  const { stdout } = await run(process.execPath, args, { timeout: 60_000 });
  return (JSON.parse(stdout) as { majors: number }).majors;
}

describe('heap flags', () => {
  it('asks for the flag only on a V8 that has it and does not do it by default', () => {
    const cases: Array<[string, string | null]> = [
      ['12.4.254.21-node.33', null],
      ['12.9.202.28-node.14', null],
      ['13.0.245.25', EXTERNAL_MEMORY_FLAG],
      ['13.6.233.17-node.37', EXTERNAL_MEMORY_FLAG],
      ['14.6.100.1', EXTERNAL_MEMORY_FLAG],
      ['14.7.9.9', EXTERNAL_MEMORY_FLAG],
      ['14.8.0.0', null],
      ['15.1.2.3', null],
      ['', null],
    ];
    for (const [version, flag] of cases) expect(heapFlagFor(version), version).toBe(flag);
  });

  it('runs at most a quarter of the full collections for buffers it does not keep', async () => {
    const without = await majorCollections(false);
    const withFlags = await majorCollections(true);
    // This runtime (Node 24, V8 13.6) counts every buffer byte allocated since the last full
    // collection: 1 GiB of them beside this heap started 12-13 here; with the flag 0-3.
    if (heapFlagFor(process.versions.v8) !== null) expect(without).toBeGreaterThanOrEqual(8);
    expect(withFlags).toBeLessThanOrEqual(Math.max(2, without / 4));
  }, 120_000);
});
