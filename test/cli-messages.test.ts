// Error text on one line that names what it is about: "No file at this path: analysis/fit.m", not
// just the catalogue's "No file at this path", and commander's suggestion on the same line.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CliError, EXIT, humanMessage } from '../cli/errors.js';
import { parseJson, runCli, servedHome } from './cli-harness.js';

type Served = Awaited<ReturnType<typeof servedHome>>;
let served: Served;
let env: NodeJS.ProcessEnv;

beforeAll(async () => {
  served = await servedHome('strata-messages-');
  const created = await runCli(['project', 'create', 'messages', '--json'], served.env);
  expect(created.code, created.stderr).toBe(0);
  env = { ...served.env, STRATA_PROJECT_ID: parseJson<{ projectId: string }>(created).projectId };
}, 60_000);
afterAll(async () => {
  await served?.dispose();
});

describe('error lines', () => {
  it('PATH_NOT_FOUND names the path, for every command that takes one', async () => {
    for (const args of [['cat', 'analysis/fit.m'], ['rm', 'analysis/fit.m'], ['mv', 'analysis/fit.m', 'b.m']]) {
      const result = await runCli(args, env);
      expect(result.code, args.join(' ')).toBe(3);
      expect(result.stderr).toBe('strata: No file at this path: analysis/fit.m (PATH_NOT_FOUND)\n');
    }
    // under --json the document keeps the server's message and carries the path as a field
    const json = await runCli(['cat', 'analysis/fit.m', '--json'], env);
    expect(parseJson<{ error: { message: string; details: { path: string } } }>(json).error).toMatchObject({
      message: 'No file at this path',
      details: { path: 'analysis/fit.m' },
    });
  });

  it("commander's suggestion stays on the error's line", async () => {
    const result = await runCli(['snapshott'], env);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/^strata: unknown command 'snapshott' \(Did you mean [^\n]*snapshot[^\n]*\?\) \(USAGE\)\n$/);
  });

  it('names the first subject the details carry, once, with unsafe characters replaced', () => {
    const error = (message: string, details: Record<string, unknown>) => new CliError('X', message, { exitCode: EXIT.notFound, details });
    expect(humanMessage(error('Snapshot not found', { snapshotId: 'v1.0' }))).toBe('Snapshot not found: v1.0');
    expect(humanMessage(error('Cannot move', { path: 'a.m', projectId: 'p' }))).toBe('Cannot move: a.m');
    expect(humanMessage(error('a.m is a directory', { path: 'a.m' }))).toBe('a.m is a directory');
    expect(humanMessage(error('Not found', { path: 'evil\u202etxt.exe' }))).toBe('Not found: evil?txt.exe');
    expect(humanMessage(error('two\nlines', {}))).toBe('two lines');
    expect(humanMessage(error('Not found', { path: 42 }))).toBe('Not found');
  });
});
