// Datasets end to end: `strata dataset track|untrack|threshold|ls|show` and `strata put`/`cat` against
// a live `strata serve`, plus HTTP range reads of a dataset and the manifest routes' bad input.
import { randomBytes } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { baseEnv, parseJson, type RunResult, runCli, type ServeHandle, startServe, tempDir } from './cli-harness.js';

let dir: { path: string; remove(): Promise<void> };
let server: ServeHandle | undefined;
let env: NodeJS.ProcessEnv;
let apiKey = '';
let projectId = '';

async function ok<T>(args: string[]): Promise<T> {
  const result = await runCli([...args, '--json'], env, { timeoutMs: 60_000 });
  if (result.code !== 0) throw new Error(`strata ${args.join(' ')} exited ${result.code}: ${result.stderr}`);
  return parseJson<T>(result);
}

const api = (path: string, init: RequestInit = {}) =>
  fetch(`${server!.url}/v1/projects/${projectId}${path}`, { ...init, headers: { authorization: `Bearer ${apiKey}`, ...(init.headers ?? {}) } });

beforeAll(async () => {
  dir = await tempDir('strata-cli-datasets-');
  const home = join(dir.path, 'home');
  env = baseEnv(join(dir.path, 'config'));
  const boot = await runCli(['admin', 'bootstrap', '--home', home, '--json'], env);
  expect(boot.code, boot.stderr).toBe(0);
  apiKey = parseJson<{ apiKey: string }>(boot).apiKey;
  server = await startServe(home, env);
  env = { ...env, STRATA_SERVER_URL: server.url, STRATA_API_KEY: apiKey };
  projectId = (await ok<{ projectId: string }>(['project', 'create', 'data'])).projectId;
}, 60_000);

afterAll(async () => {
  await server?.stop();
  await dir?.remove();
}, 30_000);

describe('strata dataset', () => {
  const data = randomBytes(6 * 1024 * 1024);

  it('tracks a glob (with --project), stores a put file as shards, and reads it back whole and by range', async () => {
    const track = await ok<{ rules: { tracked: string[] } }>(['dataset', 'track', 'data/*.bin', '--project', projectId]);
    expect(track.rules.tracked).toEqual(['data/*.bin']);
    env = { ...env, STRATA_PROJECT_ID: projectId };

    const local = join(dir.path, 'x.bin');
    await writeFile(local, data);
    const put = await ok<{ version: { dataset: boolean; size: number } }>(['put', local, 'data/x.bin']);
    expect(put.version).toMatchObject({ dataset: true, size: data.length });

    const cat = await runCli(['cat', 'data/x.bin'], env, { timeoutMs: 60_000 });
    expect(cat.code, cat.stderr).toBe(0);
    expect(cat.stdoutBytes.equals(data)).toBe(true);

    const ranged = await api('/fs/read?path=data%2Fx.bin', { headers: { range: 'bytes=1000000-3000000' } });
    expect(ranged.status).toBe(206);
    expect(Buffer.from(await ranged.arrayBuffer()).equals(data.subarray(1_000_000, 3_000_001))).toBe(true);
  });

  it('shows the manifest and its history; ls lists the datasets; a small edit stores few new shards', async () => {
    const edited = Buffer.from(data);
    edited[100] = (edited[100]! + 1) & 0xff;
    const local = join(dir.path, 'x2.bin');
    await writeFile(local, edited);
    await ok(['put', local, 'data/x.bin']);

    const show = await ok<{ manifest: { size: number; shards: unknown[] }; history: Array<{ shardCount: number; newShards: number | null }> }>([
      'dataset',
      'show',
      'data/x.bin',
    ]);
    expect(show.manifest.size).toBe(data.length);
    expect(show.history).toHaveLength(2);
    expect(show.history[0]!.newShards).toBeGreaterThanOrEqual(1);
    expect(show.history[0]!.newShards).toBeLessThanOrEqual(2);

    const human = await runCli(['dataset', 'show', 'data/x.bin', '--shards'], env);
    expect(human.code, human.stderr).toBe(0);
    expect(human.stdout).toMatch(/data\/x\.bin: 6\.0 MiB in \d+ shards/);
    expect(human.stdout).toContain('fastcdc-gear64-v1');

    // `strata history` says what the versions are: a dataset's (it said 'file').
    const history = await runCli(['history', 'data/x.bin'], env);
    expect(history.code, history.stderr).toBe(0);
    const rows = history.stdout.split('\n').filter((line) => line.includes('data/x.bin'));
    expect(rows).toHaveLength(2);
    for (const row of rows) expect(row).toMatch(/\swrite\s+dataset\s+6\.0 MiB\s/);

    const ls = await ok<{ items: Array<{ path: string }> }>(['dataset', 'ls']);
    expect(ls.items.map((e) => e.path)).toEqual(['data/x.bin']);
    const untrack = await ok<{ rules: { tracked: string[] } }>(['dataset', 'untrack', 'data/*.bin']);
    expect(untrack.rules.tracked).toEqual([]);
  });

  it('refuses bad patterns and non-datasets with coded errors, changing nothing', async () => {
    for (const bad of ['../x', '/abs', 'dir/']) {
      const result: RunResult = await runCli(['dataset', 'track', bad, '--json'], env);
      expect(result.code).not.toBe(0);
      expect(JSON.parse(result.stdout || result.stderr).error.code).toBe('INVALID_ARGUMENT');
    }
    const rules = (await (await api('/fs/datasets')).json()) as { rules: { tracked: string[] } };
    expect(rules.rules.tracked).toEqual([]);

    await writeFile(join(dir.path, 'n.txt'), 'plain');
    await ok(['put', join(dir.path, 'n.txt'), 'n.txt']);
    const notDataset = await api('/fs/dataset/manifest?path=n.txt');
    expect(notDataset.status).toBe(404);
    expect(((await notDataset.json()) as { error: { code: string } }).error.code).toBe('NOT_A_DATASET');
    const unknownField = await api('/fs/datasets/track', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"pattern":"a","x":1}' });
    expect(unknownField.status).toBe(400);
  });
});
