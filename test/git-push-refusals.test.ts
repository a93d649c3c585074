// What a push must refuse whole (issue 13, items 14, 15, 17): a parentless commit sent to a project
// that already has history (`git fast-export A..B` without --reference-excluded-parents), a stream cut
// short before its `done`, and names git allows but the file API does not. Each is refused with a
// code, and the project — snapshots, head, files — is exactly what it was.
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseJson, type RunResult, runCli, type ServeHandle, servedHome } from './cli-harness.js';
import { git } from './helpers/git.js';

let dir: { path: string; remove(): Promise<void> };
let server: ServeHandle | undefined;
let env: NodeJS.ProcessEnv;
let apiKey = '';

const cli = (args: string[], cwd?: string): Promise<RunResult> => runCli([...args, '--json'], env, { timeoutMs: 60_000, ...(cwd === undefined ? {} : { cwd }) });
async function ok<T>(args: string[], cwd?: string): Promise<T> {
  const result = await cli(args, cwd);
  if (result.code !== 0) throw new Error(`strata ${args.join(' ')} exited ${result.code}: ${result.stderr}${result.stdout}`);
  return parseJson<T>(result);
}
const api = (projectId: string, path: string, init: RequestInit = {}) =>
  fetch(`${server!.url}/v1/projects/${projectId}${path}`, { ...init, headers: { authorization: `Bearer ${apiKey}`, ...(init.headers ?? {}) } });
const receive = (projectId: string, body: Buffer | string) => api(projectId, '/fs/git/receive', { method: 'POST', body, headers: { 'content-type': 'application/octet-stream' } });

async function commitAll(repo: string, message: string): Promise<string> {
  await git(repo, dir.path, ['add', '-A']);
  await git(repo, dir.path, ['-c', 'user.name=Ada', '-c', 'user.email=ada@lab.example', 'commit', '-q', '-m', message]);
  return (await git(repo, dir.path, ['rev-parse', 'HEAD'])).toString().trim();
}

/** Everything a refused push must leave alone. */
async function projectState(projectId: string): Promise<unknown> {
  const [snapshots, tree, refs] = await Promise.all([
    api(projectId, '/fs/snapshots').then((r) => r.json()),
    api(projectId, '/fs/dir?path=').then((r) => r.json()),
    api(projectId, '/fs/git/refs').then((r) => r.json()),
  ]);
  return { snapshots, tree, refs };
}

let served: Awaited<ReturnType<typeof servedHome>> | undefined;

beforeAll(async () => {
  served = await servedHome('strata-git-refusals-');
  ({ dir, server, apiKey } = served);
  env = { ...served.env, HOME: dir.path, GIT_CONFIG_NOSYSTEM: '1' };
}, 60_000);

afterAll(async () => {
  await served?.dispose();
}, 30_000);

describe('a push is refused whole', () => {
  let projectId = '';
  const repo = () => join(dir.path, 'work');

  beforeAll(async () => {
    projectId = (await ok<{ projectId: string }>(['project', 'create', 'refusals'])).projectId;
    await git(dir.path, dir.path, ['init', '-q', '-b', 'main', repo()]);
    await git(repo(), dir.path, ['config', 'strata.project', projectId]);
    await writeFile(join(repo(), 'a.txt'), 'a1\n');
    await writeFile(join(repo(), 'b.txt'), 'b1\n');
    await commitAll(repo(), 'first');
    await ok(['git', 'push'], repo());
  }, 60_000);

  it('a parentless commit on a project with history: 409, not grafted onto the tip', async () => {
    await writeFile(join(repo(), 'c.txt'), 'c1\n');
    await commitAll(repo(), 'second');
    const before = await projectState(projectId);
    // `A..B` without --reference-excluded-parents: the first commit has no `from` and lists only what
    // it changed. Grafted onto the tip, it used to make a head mixing both trees.
    for (const flags of [['--use-done-feature'], ['--use-done-feature', '--show-original-ids']]) {
      const partial = await git(repo(), dir.path, ['fast-export', ...flags, 'main~1..main']);
      const response = await receive(projectId, partial);
      expect(response.status, await response.clone().text()).toBe(409);
      const error = ((await response.json()) as { error: { code: string; message: string } }).error;
      expect(error.code).toBe('GIT_NOT_FAST_FORWARD');
      expect(error.message).toContain('no parent');
    }
    expect(JSON.stringify(await projectState(projectId), null, 1)).toBe(JSON.stringify(before, null, 1));
    // the same commit pushed properly is a fast-forward
    const pushed = await ok<{ applied: unknown[] }>(['git', 'push'], repo());
    expect(pushed.applied).toHaveLength(1);
  });

  it('a stream cut short before `done`: 400 GIT_STREAM_INVALID, no prefix applied', async () => {
    await writeFile(join(repo(), 'a.txt'), 'a2\n');
    await commitAll(repo(), 'third');
    await writeFile(join(repo(), 'b.txt'), 'b2\n');
    await commitAll(repo(), 'fourth');
    const before = await projectState(projectId);
    const stream = (await git(repo(), dir.path, ['fast-export', '--use-done-feature', '--show-original-ids', '--reference-excluded-parents', 'main~2..main'])).toString('latin1');
    // cut at a command boundary, right after the first commit: it parses, and once applied half
    const cut = stream.slice(0, stream.indexOf('\ncommit ', stream.indexOf('\ncommit ') + 1) + 1);
    expect(cut).toContain('third');
    expect(cut).not.toContain('fourth');
    for (const body of [cut, stream.replace(/done\n$/, ''), stream.replace(/^feature done\n/, '').replace(/done\n$/, '')]) {
      const response = await receive(projectId, Buffer.from(body, 'latin1'));
      expect(response.status).toBe(400);
      expect(((await response.json()) as { error: { code: string } }).error.code).toBe('GIT_STREAM_INVALID');
    }
    expect(JSON.stringify(await projectState(projectId), null, 1)).toBe(JSON.stringify(before, null, 1));
    // whole, it applies both
    const whole = await receive(projectId, Buffer.from(stream, 'latin1'));
    expect(whole.status).toBe(200);
    expect(((await whole.json()) as { applied: unknown[] }).applied).toHaveLength(2);
  });

  it('a push whose later commit cannot be applied applies none of it (issue 13 item 18: all or nothing)', async () => {
    // the project already has the tag the second pushed commit carries
    const snapshots = (await (await api(projectId, '/fs/snapshots')).json()) as { items: Array<{ snapshotId: string }> };
    await ok(['tag', 'add', snapshots.items[0]!.snapshotId, 'taken', '--project', projectId]);
    await writeFile(join(repo(), 'a.txt'), 'a3\n');
    await commitAll(repo(), 'fifth');
    await writeFile(join(repo(), 'b.txt'), 'b3\n');
    await commitAll(repo(), 'sixth');
    await git(repo(), dir.path, ['tag', 'taken']);
    const before = await projectState(projectId);
    const stream = await git(repo(), dir.path, ['fast-export', '--use-done-feature', '--show-original-ids', '--reference-excluded-parents', '^main~2', 'main', 'taken']);
    const response = await receive(projectId, stream);
    expect(response.status).toBe(409);
    expect(((await response.json()) as { error: { code: string } }).error.code).toBe('TAG_TAKEN');
    // the first of the two commits was not applied either
    expect(JSON.stringify(await projectState(projectId), null, 1)).toBe(JSON.stringify(before, null, 1));
    await git(repo(), dir.path, ['tag', '-d', 'taken']);
    const pushed = await ok<{ applied: unknown[] }>(['git', 'push'], repo());
    expect(pushed.applied).toHaveLength(2);
  });

  it.each([
    ['a newline', 'line\nbreak.txt', 'control character'],
    ['a tab', 'tab\there.txt', 'control character'],
    ['a right-to-left override', 'report\u202Etxt.exe', 'invisible formatting character'],
  ])('a name with %s: 422 INVALID_PATH naming it, nothing stored', async (_what, name, reason) => {
    const before = await projectState(projectId);
    await writeFile(join(repo(), name), 'odd\n');
    await writeFile(join(repo(), 'a.txt'), `a with ${JSON.stringify(name)}\n`);
    await commitAll(repo(), `adds ${JSON.stringify(name)}`);
    const result = await cli(['git', 'push'], repo());
    expect(result.code).not.toBe(0);
    const error = JSON.parse(result.stdout || result.stderr).error as { code: string; message: string; details: { path: string } };
    expect(error.code).toBe('INVALID_PATH');
    expect(error.message).toContain(reason);
    expect(JSON.parse(error.details.path)).toBe(name);
    // the name is quoted with its unsafe character escaped: it cannot break or reorder the line
    expect(error.message).not.toContain(name);
    expect(JSON.stringify(await projectState(projectId), null, 1)).toBe(JSON.stringify(before, null, 1));
    await git(repo(), dir.path, ['reset', '-q', '--hard', 'HEAD~1']);
  });
});
