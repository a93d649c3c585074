// Exit codes, error output and configuration precedence: the part of the CLI that scripts depend on.

import { chmod, mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  baseEnv,
  closedPort,
  parseJson,
  type RunResult,
  runCli,
  type ServeHandle,
  startServe,
  tempDir,
} from './cli-harness.js';

interface ErrorDoc {
  error: { code: string; message: string; exitCode: number; status?: number };
}

let dir: { path: string; remove(): Promise<void> };
let home = '';
let server: ServeHandle | undefined;
let clean: NodeJS.ProcessEnv;
let env: NodeJS.ProcessEnv;
let apiKey = '';
let projectId = '';

function expectError(result: RunResult, exitCode: number, code: string): ErrorDoc {
  expect(result.code, `stderr: ${result.stderr}`).toBe(exitCode);
  expect(result.stderr).toMatch(new RegExp(`^strata: .+ \\(${code}\\)$`, 'm'));
  const doc = parseJson<ErrorDoc>(result);
  expect(doc.error.code).toBe(code);
  expect(doc.error.exitCode).toBe(exitCode);
  return doc;
}

beforeAll(async () => {
  dir = await tempDir('strata-cli-errors-');
  home = join(dir.path, 'home');
  clean = baseEnv(join(dir.path, 'config'));
  const boot = await runCli(['admin', 'bootstrap', '--home', home, '--json'], clean);
  expect(boot.code, boot.stderr).toBe(0);
  apiKey = parseJson<{ apiKey: string }>(boot).apiKey;
  server = await startServe(home, clean);
  env = { ...clean, STRATA_SERVER_URL: server.url, STRATA_API_KEY: apiKey };
  const project = await runCli(['project', 'create', 'errors', '--json'], env);
  expect(project.code, project.stderr).toBe(0);
  projectId = parseJson<{ projectId: string }>(project).projectId;
  env = { ...env, STRATA_PROJECT_ID: projectId };
});

afterAll(async () => {
  await server?.stop();
  await dir?.remove();
}, 30_000);

describe('exit codes', () => {
  it('3: not found (path, version, project)', async () => {
    expectError(await runCli(['cat', 'missing.txt', '--json'], env), 3, 'PATH_NOT_FOUND');
    const noProject = await runCli(['ls', '--json'], env, { env: { STRATA_PROJECT_ID: '01890000-0000-7000-8000-000000000000' } });
    expect(noProject.code).toBe(3);
    expectError(await runCli(['put', join(dir.path, 'nope.bin'), 'a.bin', '--json'], env), 3, 'LOCAL_FILE_NOT_FOUND');
  });

  it('4: conflict', async () => {
    const first = await runCli(['put', '-', 'a.txt', '--json'], env, { input: 'one' });
    expect(first.code).toBe(0);
    const stale = await runCli(['put', '-', 'a.txt', '--base-version', '', '--json'], env, { input: 'two' });
    expectError(stale, 4, 'STALE_BASE_VERSION');
  });

  it('5: bad, missing or unknown credentials', async () => {
    const doc = expectError(
      await runCli(['ls', '--json'], env, { env: { STRATA_API_KEY: 'rk.local.nosuchkey.secret' } }),
      5,
      'UNAUTHENTICATED',
    );
    expect(doc.error.status).toBe(401);
    expect((await runCli(['ls'], env, { env: { STRATA_API_KEY: 'garbage' } })).code).toBe(5);
    expectError(await runCli(['ls', '--json'], env, { env: { STRATA_API_KEY: undefined } }), 5, 'NO_CREDENTIALS');
  });

  it('6: bad input named by the server', async () => {
    const doc = expectError(await runCli(['put', '-', '../escape.txt', '--json'], env, { input: 'x' }), 6, 'INVALID_PATH');
    expect(doc.error.message).toMatch(/path/i);
    // A right-to-left override would make `‮txt.exe` list as `exe.txt` (issue 13, item 12).
    const bidi = expectError(await runCli(['put', '-', '\u202etxt.exe', '--json'], env, { input: 'x' }), 6, 'INVALID_PATH');
    expect(bidi.error.message).toContain('U+202E');
    // A large upload the server rejects up front: it answers and closes while the CLI is still sending,
    // which must still surface the server's error, not a network failure.
    const big = join(dir.path, 'big.bin');
    await writeFile(big, Buffer.alloc(48 * 1024 * 1024));
    expectError(await runCli(['put', big, '../escape.bin', '--json'], env), 6, 'INVALID_PATH');
    expectError(await runCli(['put', big, 'x.bin', '--json'], env, { env: { STRATA_API_KEY: 'rk.local.nosuchkey.secret' } }), 5, 'UNAUTHENTICATED');
    expectError(
      await runCli(['put', big, 'x.bin', '--json'], env, { env: { STRATA_PROJECT_ID: '01890000-0000-7000-8000-000000000000' } }),
      3,
      'PROJECT_NOT_FOUND',
    );
    expect((await runCli(['retention', 'set', '99999999999999999999'], env)).code).toBe(2);
  });

  it('7: server unreachable', async () => {
    const port = await closedPort();
    const doc = expectError(
      await runCli(['ls', '--json'], env, { env: { STRATA_SERVER_URL: `http://127.0.0.1:${port}` } }),
      7,
      'SERVER_UNREACHABLE',
    );
    expect(doc.error.message).toContain(`127.0.0.1:${port}`);
    const human = await runCli(['project', 'list'], env, { env: { STRATA_SERVER_URL: `http://127.0.0.1:${port}` } });
    expect(human.code).toBe(7);
    expect(human.stdout).toBe('');
    expect(human.stderr).toContain('strata serve');
  });

  it('2: usage errors, with a JSON error document under --json', async () => {
    expectError(await runCli(['frobnicate', '--json'], env), 2, 'USAGE');
    expectError(await runCli(['put', '--json'], env), 2, 'USAGE');
    expectError(await runCli(['history', '--limit', '0', '--json'], env), 2, 'USAGE');
    expectError(await runCli(['ls', '--json'], env, { env: { STRATA_PROJECT_ID: undefined } }), 2, 'NO_PROJECT');
    expectError(await runCli(['ls', '--json', '--server', 'ftp://example.org'], env), 2, 'USAGE');
    expect((await runCli(['snapshot'], env)).code).toBe(2);
    expect((await runCli(['--help'], env)).code).toBe(0);
    const version = await runCli(['--version'], env);
    expect(version.stdout.trim()).toMatch(/^\d+\.\d+\.\d+$/);
  });

  it('4: bootstrapping a home twice', async () => {
    expectError(await runCli(['admin', 'bootstrap', '--home', home, '--json'], clean), 4, 'ALREADY_BOOTSTRAPPED');
  });
});

describe('configuration', () => {
  it('reads the config file, and lets the environment and then flags override it', async () => {
    const configHome = join(dir.path, 'cfg');
    await mkdir(join(configHome, 'strata'), { recursive: true });
    await writeFile(
      join(configHome, 'strata', 'config.json'),
      JSON.stringify({ serverUrl: server!.url, apiKey, projectId }),
      { mode: 0o600 },
    );
    const fromFile = { ...baseEnv(configHome) };
    expect((await runCli(['ls'], fromFile)).code).toBe(0);
    const port = await closedPort();
    const envWins = { ...fromFile, STRATA_SERVER_URL: `http://127.0.0.1:${port}` };
    expect((await runCli(['ls'], envWins)).code).toBe(7);
    expect((await runCli(['ls', '--server', server!.url], envWins)).code).toBe(0);
  });

  it('warns that --api-key lands in shell history, and never echoes the key', async () => {
    const result = await runCli(['ls', '--api-key', apiKey], env, { env: { STRATA_API_KEY: undefined } });
    expect(result.code).toBe(0);
    expect(result.stderr).toContain('shell history');
    expect(result.stdout + result.stderr).not.toContain(apiKey);
  });

  it('reports a broken config file as a usage error', async () => {
    const configHome = join(dir.path, 'broken');
    await mkdir(join(configHome, 'strata'), { recursive: true });
    await writeFile(join(configHome, 'strata', 'config.json'), '{not json');
    expectError(await runCli(['ls', '--json'], baseEnv(configHome)), 2, 'CONFIG_INVALID');
  });
});

describe('local maintenance and serve lifecycle', () => {
  it('runs fsck in-process on a home', async () => {
    const result = await runCli(['fsck', '--home', home, '--json'], clean);
    expect(result.code, result.stderr).toBe(0);
    expect(parseJson<{ ok: boolean }>(result).ok).toBe(true);
  });

  it('exits 8 when fsck finds a corrupt object, and still prints the report', async () => {
    // Above the store's small-object size, so the content lands in its own file we can damage.
    const put = await runCli(['put', '-', 'data/raw.bin', '--json'], env, { input: Buffer.alloc(200 * 1024, 7) });
    expect(put.code, put.stderr).toBe(0);
    const hash = parseJson<{ version: { contentHash: string } }>(put).version.contentHash.replace('blake3:', '');
    const files = (await readdir(join(home, 'store'), { recursive: true })).filter((f) => f.replaceAll('/', '').endsWith(hash));
    expect(files).toHaveLength(1);
    const file = join(home, 'store', files[0]!);
    const bytes = await readFile(file);
    bytes[0] = bytes[0]! ^ 0xff;
    await chmod(file, 0o600);
    await writeFile(file, bytes);

    const result = await runCli(['fsck', '--home', home, '--json'], clean);
    expect(result.code, result.stderr).toBe(8);
    const report = parseJson<{ ok: boolean; corrupt: string[] }>(result);
    expect(report.ok).toBe(false);
    expect(report.corrupt).toContain(`blake3:${hash}`);
    const human = await runCli(['fsck'], env);
    expect(human.code).toBe(8);
    expect(human.stdout).toContain(`corrupt blake3:${hash}`);
  });

  it('rejects a malformed --listen', async () => {
    expectError(await runCli(['serve', '--home', home, '--listen', 'nonsense', '--json'], clean), 2, 'USAGE');
  });

  it('exits 0 on SIGTERM and SIGINT after closing', async () => {
    expect(await server!.stop()).toBe(0);
    const again = await startServe(home, clean);
    again.child.kill('SIGINT');
    expect(await again.exited).toBe(0);
    expect(again.stderr()).toContain('closing');
  });
});
