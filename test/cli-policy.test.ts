// `strata policy` and the warnings of the size policy (issue 13 item 4): files over the threshold
// keep only their current content unless allowlisted — datasets too — and nobody learns it by losing
// a version: `strata put`, `strata history` and `strata status` say so, naming the path.
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { baseEnv, MAIN, parseJson, type RunResult, runCli, servedHome, startListening } from './cli-harness.js';
import { sh, waitFor } from './daemon-harness.js';

describe('strata policy against a server', () => {
  let served: Awaited<ReturnType<typeof servedHome>> | undefined;
  let dir: { path: string };
  let env: NodeJS.ProcessEnv;
  const cli = (args: string[]): Promise<RunResult> => runCli([...args, '--json'], env, { timeoutMs: 60_000 });
  beforeAll(async () => {
    served = await servedHome('strata-policy-');
    dir = served.dir;
    env = served.env;
    const project = parseJson<{ projectId: string }>(await cli(['project', 'create', 'policy']));
    env = { ...env, STRATA_PROJECT_ID: project.projectId };
  }, 60_000);
  afterAll(async () => {
    await served?.dispose();
  }, 30_000);

  it('shows, sets the threshold, allows and disallows; put and history warn about a path whose history is not kept', async () => {
    const shown = parseJson<{ sizeThreshold: number; largeFileAllowlist: string[] }>(await cli(['policy']));
    expect(shown).toMatchObject({ sizeThreshold: 50 * 1024 * 1024, largeFileAllowlist: [] });
    const human = await runCli(['policy'], env);
    expect(human.stdout).toMatch(/size threshold:\s+50 MiB/);
    expect(human.stdout).toMatch(/keeps only its current content/);

    expect(parseJson<{ sizeThreshold: number }>(await cli(['policy', 'threshold', '1KiB'])).sizeThreshold).toBe(1024);
    const bad = await cli(['policy', 'threshold', 'lots']);
    expect(bad.code).not.toBe(0);
    expect(JSON.parse(bad.stdout).error.code).toBe('USAGE');

    const local = join(dir.path, 'results.csv');
    await writeFile(local, 'a'.repeat(2048));
    const first = await cli(['put', local, 'results.csv']);
    expect(first.code).toBe(0);
    expect(parseJson<{ historyKept: boolean }>(first).historyKept).toBe(false);
    expect(first.stderr).toMatch(/the history of "results\.csv" \(2\.0 KiB\) is not kept.*strata policy allow \.csv/);
    await writeFile(local, 'b'.repeat(2048));
    await cli(['put', local, 'results.csv']);
    await waitFor('the older version pruned', async () => {
      const history = parseJson<{ items: unknown[] }>(await cli(['history', 'results.csv']));
      return history.items.length === 1 ? true : undefined;
    });
    const history = await cli(['history', 'results.csv']);
    expect(history.stderr).toMatch(/the history of "results\.csv" .* is not kept/);

    expect(parseJson<{ largeFileAllowlist: string[] }>(await cli(['policy', 'allow', 'csv', '.H5'])).largeFileAllowlist).toEqual(['.csv', '.h5']);
    await writeFile(local, 'c'.repeat(2048));
    const kept = await cli(['put', local, 'results.csv']);
    expect(kept.stderr).not.toMatch(/not kept/);
    expect(parseJson<{ items: unknown[] }>(await cli(['history', 'results.csv'])).items).toHaveLength(2);
    expect((await cli(['history', 'results.csv'])).stderr).not.toMatch(/not kept/);
    expect(parseJson<{ largeFileAllowlist: string[] }>(await cli(['policy', 'disallow', '.csv'])).largeFileAllowlist).toEqual(['.h5']);
  });
});

describe('strata status names a watched file whose history is not kept', () => {
  let root: string;
  let env: NodeJS.ProcessEnv;
  let daemon: Awaited<ReturnType<typeof startListening>> | undefined;
  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'strata-policy-watch-'));
    env = { ...baseEnv(join(root, 'config')), STRATA_HOME: join(root, 'home') };
  });
  afterAll(async () => {
    if (daemon && daemon.child.exitCode === null) daemon.child.kill('SIGKILL');
    await rm(root, { recursive: true, force: true });
  });

  it('warns in status, with the path and how to keep its history', async () => {
    const dir = join(root, 'lab');
    await mkdir(dir);
    const strata = (args: string[]) => sh(process.execPath, [MAIN, ...args], { cwd: dir, env, timeoutMs: 30_000 });
    await strata(['init', dir]);
    daemon = await startListening(['daemon', '--listen', '127.0.0.1:0'], env);
    await strata(['policy', 'threshold', '1KiB']);
    await writeFile(join(dir, 'scan.tif'), Buffer.alloc(4096, 1));
    const status = await waitFor('the warning in status', async () => {
      const projects = (JSON.parse((await strata(['status', '--json'])).stdout) as { projects: Array<{ warnings: string[] }> }).projects;
      return projects[0]!.warnings.find((w) => w.includes('is not kept'));
    }, 20_000);
    expect(status).toMatch(/history of 1 large file\(s\) is not kept, e\.g\. "scan\.tif".*strata policy allow \.tif/);
  }, 60_000);
});
