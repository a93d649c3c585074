// fs/read of a dataset through reused buffers (engine/datasets/pump-dataset.ts,
// control-api/sink-driven-stream.ts): the server sends the bytes without allocating a buffer per
// read, so a large read starts (almost) no full collection of its heap, and a damaged shard still
// fails the transfer.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { randomBytes } from 'node:crypto';
import { open, readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { REPO_ROOT, runCli, startServerProcess } from './helpers/server-process.js';
import { tempDir } from './helpers/world.js';

const SERVE = pathToFileURL(join(REPO_ROOT, 'dist', 'server', 'serve.js')).href;
const MIB = 1024 * 1024;

// The server in a child process: curl reads the file four times; prints the bytes the server
// allocated in buffers meanwhile (Buffer's allocators counted, then called as they are: every file
// read of the stream path takes a new one) and its full collections (reported, not asserted: whether
// a process storms depends on the machine's load; see docs/benchmarks.md).
const CHILD = `
import { Buffer } from 'node:buffer';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { constants, PerformanceObserver } from 'node:perf_hooks';
const [home, apiKey, projectId, out] = process.argv.slice(1);
const { startServer } = await import(${JSON.stringify(SERVE)});
const server = await startServer({ home, listen: '127.0.0.1:0', logger: false });
let majors = 0;
new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) if (entry.detail?.kind === constants.NODE_PERFORMANCE_GC_MAJOR) majors++;
}).observe({ entryTypes: ['gc'] });
let allocated = 0;
for (const name of ['alloc', 'allocUnsafe', 'allocUnsafeSlow']) {
  const real = Buffer[name];
  Buffer[name] = function (size, ...rest) {
    allocated += size;
    return real.call(this, size, ...rest);
  };
}
await new Promise((resolve) => setTimeout(resolve, 50));
majors = 0;
allocated = 0;
// Four reads: V8 sizes its next limit from how the last collections went, so a process's first read
// of fresh buffers is often calm and the later ones storm (docs/benchmarks.md).
let code = 0;
for (let i = 0; i < 4 && code === 0; i++) {
  const target = i === 0 ? out : '/dev/null';
  const curl = spawn('curl', ['-sf', '-o', target, '-H', 'authorization: Bearer ' + apiKey, server.url.replace(/\\/$/, '') + '/v1/projects/' + projectId + '/fs/read?path=big.bin'], { stdio: 'ignore' });
  [code] = await once(curl, 'exit');
}
await new Promise((resolve) => setTimeout(resolve, 50));
process.stdout.write(JSON.stringify({ majors, allocated, code }));
await server.close();
`;

describe('fs/read of a dataset through reused buffers', () => {
  let dir: Awaited<ReturnType<typeof tempDir>>;
  let home: string;
  let apiKey: string;
  let projectId: string;
  let source: string;

  beforeEach(async () => {
    dir = await tempDir('strata-read-pooled-');
    home = join(dir.path, 'home');
    const boot = await runCli(['admin', 'bootstrap', '--home', home, '--json']);
    expect(boot.code, boot.stderr).toBe(0);
    apiKey = (JSON.parse(boot.stdout) as { apiKey: string }).apiKey;
    // 192 MiB: above the dataset threshold (64 MiB), about 200 shards.
    source = join(dir.path, 'big.bin');
    const file = await open(source, 'w');
    for (let i = 0; i < 192; i++) await file.write(randomBytes(MIB));
    await file.close();
    const server = await startServerProcess(home);
    try {
      const env = { STRATA_SERVER_URL: server.url, STRATA_API_KEY: apiKey };
      const created = await runCli(['projects', 'create', 'p', '--json'], env);
      expect(created.code, created.stderr).toBe(0);
      projectId = (JSON.parse(created.stdout) as { projectId: string }).projectId;
      const put = spawn('curl', ['-sf', '-X', 'PUT', '-H', `authorization: Bearer ${apiKey}`, '-H', 'content-type: application/octet-stream', '--data-binary', `@${source}`, `${server.url}/v1/projects/${projectId}/fs/write?path=big.bin`], { stdio: ['ignore', 'pipe', 'inherit'] });
      let answer = '';
      put.stdout.on('data', (c: Buffer) => {
        answer += c.toString();
      });
      const [code] = (await once(put, 'exit')) as [number];
      expect(code).toBe(0);
      expect((JSON.parse(answer) as { version: { dataset: boolean } }).version.dataset).toBe(true);
    } finally {
      await server.stop();
    }
  }, 120_000);

  afterEach(async () => {
    await dir.cleanup();
  });

  async function readInChild(out: string): Promise<{ majors: number; allocated: number; code: number }> {
    // bin/strata's flags for serve: the same young generation as the process this is for.
    const child = spawn(process.execPath, ['--max-semi-space-size=1', '--input-type=module', '-e', CHILD, home, apiKey, projectId, out], { stdio: ['ignore', 'pipe', 'inherit'] });
    let stdout = '';
    child.stdout.on('data', (c: Buffer) => {
      stdout += c.toString();
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), 90_000);
    const [exit] = (await once(child, 'exit')) as [number];
    clearTimeout(timer);
    expect(exit).toBe(0);
    return JSON.parse(stdout) as { majors: number; allocated: number; code: number };
  }

  it('sends the same bytes without allocating a buffer per read', async () => {
    const out = join(dir.path, 'out.bin');
    const { majors, allocated, code } = await readInChild(out);
    expect(code).toBe(0);
    expect((await readFile(out)).equals(await readFile(source))).toBe(true);
    // A fresh 1 MiB buffer per file read allocated all 4 × 192 MiB (768 MiB); reused buffers at most
    // 8 MiB per read (14 MiB in all when measured).
    console.log(`fs/read 4 × 192 MiB: ${(allocated / MIB).toFixed(1)} MiB allocated in buffers, ${majors} full collections`);
    expect(allocated).toBeLessThan(64 * MIB);
  }, 120_000);

  it('fails the transfer when a shard is damaged', async () => {
    const packs = join(home, 'store', 'objects', 'packs');
    const [pack] = (await readdir(packs)).filter((name) => name.endsWith('.pack'));
    const bytes = await readFile(join(packs, pack!));
    const at = 100 * MIB;
    bytes[at] = bytes[at]! ^ 0xff;
    await writeFile(join(packs, pack!), bytes);
    const { code } = await readInChild(join(dir.path, 'out.bin'));
    // curl: 18 (partial file) or 56 (failure receiving): the body stops short of its length.
    expect(code).not.toBe(0);
  }, 120_000);
});
