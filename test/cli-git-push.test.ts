// `strata git push` and POST fs/git/receive with the real git binary: commits made in git become
// snapshots that export back to the very same commit ids (push, clone, pull stay one history);
// re-sending is harmless; only what is new is applied; merges, other branches, non-fast-forwards and
// unsnapshotted project changes are refused with 409 and change nothing.
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { baseEnv, parseJson, type RunResult, runCli, type ServeHandle, startServe, tempDir } from './cli-harness.js';
import { git } from './helpers/git.js';

let dir: { path: string; remove(): Promise<void> };
let server: ServeHandle | undefined;
let env: NodeJS.ProcessEnv;
let apiKey = '';

async function cli(args: string[], cwd?: string): Promise<RunResult> {
  return runCli([...args, '--json'], env, { timeoutMs: 60_000, ...(cwd === undefined ? {} : { cwd }) });
}
async function ok<T>(args: string[], cwd?: string): Promise<T> {
  const result = await cli(args, cwd);
  if (result.code !== 0) throw new Error(`strata ${args.join(' ')} exited ${result.code}: ${result.stderr}${result.stdout}`);
  return parseJson<T>(result);
}
const api = (projectId: string, path: string, init: RequestInit = {}) =>
  fetch(`${server!.url}/v1/projects/${projectId}${path}`, { ...init, headers: { authorization: `Bearer ${apiKey}`, ...(init.headers ?? {}) } });
const errorCode = async (response: Response) => ((await response.json()) as { error: { code: string } }).error.code;

beforeAll(async () => {
  dir = await tempDir('strata-git-push-');
  const home = join(dir.path, 'home');
  env = baseEnv(join(dir.path, 'config'));
  const boot = await runCli(['admin', 'bootstrap', '--home', home, '--json'], env);
  expect(boot.code, boot.stderr).toBe(0);
  apiKey = parseJson<{ apiKey: string }>(boot).apiKey;
  server = await startServe(home, env);
  env = { ...env, STRATA_SERVER_URL: server.url, STRATA_API_KEY: apiKey, HOME: dir.path, GIT_CONFIG_NOSYSTEM: '1' };
}, 60_000);

afterAll(async () => {
  await server?.stop();
  await dir?.remove();
}, 30_000);

async function commitAll(repo: string, message: string, date: string): Promise<string> {
  await git(repo, dir.path, ['add', '-A']);
  // an author in another time zone and a different committer: both must survive the round trip
  await git(repo, dir.path, ['-c', 'user.name=Ada', '-c', 'user.email=ada@lab.example', 'commit', '-q', '-m', message, '--author', `Grace <grace@lab.example>`, `--date=${date}`]);
  return (await git(repo, dir.path, ['rev-parse', 'HEAD'])).toString().trim();
}

describe('strata git push', () => {
  let projectId = '';
  const repo = () => join(dir.path, 'work');

  it('turns local commits into snapshots that export to the same commit ids', async () => {
    projectId = (await ok<{ projectId: string }>(['project', 'create', 'pushed'])).projectId;
    await git(dir.path, dir.path, ['init', '-q', '-b', 'main', repo()]);
    await git(repo(), dir.path, ['config', 'strata.project', projectId]);
    await writeFile(join(repo(), 'model.py'), 'print(1)\n');
    await writeFile(join(repo(), 'run.sh'), '#!/bin/sh\n', { mode: 0o755 });
    await commitAll(repo(), 'first commit\n\nwith a body', '2026-03-01T10:00:00+0200');
    await writeFile(join(repo(), 'model.py'), 'print(2)\n');
    const second = await commitAll(repo(), 'second', '2026-03-02T11:30:00-0500');
    await git(repo(), dir.path, ['tag', 'v1']);

    const pushed = await ok<{ applied: Array<{ commitId: string }>; head: { commitId: string } }>(['git', 'push'], repo());
    expect(pushed.applied).toHaveLength(2);
    expect(pushed.head.commitId).toBe(second);
    const history = (await (await api(projectId, '/history?path=model.py')).json()) as { items: Array<{ kind: string }> };
    expect(history.items.map((v) => v.kind)).toEqual(['import', 'import']);
    expect(await (await api(projectId, '/fs/read?path=model.py')).text()).toBe('print(2)\n');
    // each snapshot counts its files once (model.py 9 bytes, run.sh 10), however often they changed
    const snapshots = (await (await api(projectId, '/fs/snapshots')).json()) as { items: Array<{ fileCount: number; totalSize: number }> };
    expect(snapshots.items.map((s) => [s.fileCount, s.totalSize])).toEqual([
      [2, 19],
      [2, 19],
    ]);

    // a clone of the project is the same history, commit for commit
    const clone = await ok<{ head: string; commits: number }>(['git', 'clone', projectId, join(dir.path, 'clone')]);
    expect(clone).toMatchObject({ head: second, commits: 2 });
    expect((await git(join(dir.path, 'clone'), dir.path, ['log', '--format=%an <%ae> %ad|%cn|%B', '--date=raw', 'main'])).toString()).toBe(
      (await git(repo(), dir.path, ['log', '--format=%an <%ae> %ad|%cn|%B', '--date=raw', 'main'])).toString(),
    );
    expect((await git(join(dir.path, 'clone'), dir.path, ['ls-tree', '-r', 'main'])).toString()).toContain('100755 blob');
  });

  it('applies only what is new, and a re-sent stream is not an error', async () => {
    const up = await ok<{ applied: unknown[] }>(['git', 'push'], repo());
    expect(up.applied).toHaveLength(0);
    await writeFile(join(repo(), 'notes.md'), '# notes\n');
    await git(repo(), dir.path, ['mv', 'run.sh', 'tools.sh']);
    const third = await commitAll(repo(), 'third', '2026-03-03T09:00:00+0000');
    const pushed = await ok<{ applied: Array<{ commitId: string }>; alreadyPresent: number }>(['git', 'push'], repo());
    expect(pushed.applied.map((a) => a.commitId)).toEqual([third]);
    expect((await api(projectId, '/fs/read?path=run.sh')).status).toBe(404);
    expect(await (await api(projectId, '/fs/read?path=tools.sh')).text()).toBe('#!/bin/sh\n');

    // the whole history again, straight to the API: everything is already there
    const full = await git(repo(), dir.path, ['fast-export', '--use-done-feature', '--show-original-ids', 'main']);
    const again = await api(projectId, '/fs/git/receive', { method: 'POST', body: full, headers: { 'content-type': 'application/octet-stream' } });
    expect(again.status).toBe(200);
    expect(await again.json()).toMatchObject({ applied: [], alreadyPresent: 3, head: { commitId: third } });
  });

  it('refuses a push the project has moved past, and unsnapshotted project changes', async () => {
    await writeFile(join(dir.path, 'x.txt'), 'from strata\n');
    await ok(['put', join(dir.path, 'x.txt'), 'x.txt', '--project', projectId]);
    await writeFile(join(repo(), 'late.txt'), 'late\n');
    await commitAll(repo(), 'late', '2026-03-04T09:00:00+0000');
    const refsBefore = await (await api(projectId, '/fs/git/refs')).json();

    // the project has a change that is not in a snapshot yet
    const stream = await git(repo(), dir.path, ['fast-export', '--use-done-feature', '--show-original-ids', '--reference-excluded-parents', 'main', '^main~1']);
    const unsnapshotted = await api(projectId, '/fs/git/receive', { method: 'POST', body: stream });
    expect(unsnapshotted.status).toBe(409);
    expect(await errorCode(unsnapshotted)).toBe('GIT_UNSNAPSHOTTED_CHANGES');

    // once snapshotted, the project has moved on: the local push is not a fast-forward
    await ok(['snapshot', 'create', '-m', 'strata side', '--project', projectId]);
    const result = await cli(['git', 'push'], repo());
    expect(result.code).toBe(4);
    expect(JSON.parse(result.stdout || result.stderr).error.code).toBe('GIT_NOT_FAST_FORWARD');
    const stale = await api(projectId, '/fs/git/receive', { method: 'POST', body: stream });
    expect(stale.status).toBe(409);
    expect(await errorCode(stale)).toBe('GIT_NOT_FAST_FORWARD');
    const refsAfter = (await (await api(projectId, '/fs/git/refs')).json()) as { head: { commitId: string } };
    expect(refsAfter.head.commitId).not.toBe((refsBefore as { head: { commitId: string } }).head.commitId);
    expect(await (await api(projectId, '/fs/read?path=late.txt')).status).toBe(404);
  });

  it('refuses merges and other branches into an empty project, which stays empty', async () => {
    const empty = (await ok<{ projectId: string }>(['project', 'create', 'merge-target'])).projectId;
    const m = join(dir.path, 'merge');
    await git(dir.path, dir.path, ['init', '-q', '-b', 'main', m]);
    await writeFile(join(m, 'a.txt'), 'a\n');
    await commitAll(m, 'base', '2026-03-01T00:00:00+0000');
    await git(m, dir.path, ['checkout', '-q', '-b', 'side']);
    await writeFile(join(m, 'b.txt'), 'b\n');
    await commitAll(m, 'side', '2026-03-02T00:00:00+0000');
    const branches = await git(m, dir.path, ['fast-export', '--use-done-feature', '--all']);
    const other = await api(empty, '/fs/git/receive', { method: 'POST', body: branches });
    expect(other.status).toBe(409);
    expect(await errorCode(other)).toBe('GIT_NOT_LINEAR');
    await git(m, dir.path, ['checkout', '-q', 'main']);
    await writeFile(join(m, 'c.txt'), 'c\n');
    await commitAll(m, 'main side', '2026-03-03T00:00:00+0000');
    await git(m, dir.path, ['-c', 'user.name=x', '-c', 'user.email=y', 'merge', '-q', '--no-edit', 'side']);
    const merged = await api(empty, '/fs/git/receive', { method: 'POST', body: await git(m, dir.path, ['fast-export', '--use-done-feature', 'main']) });
    expect(merged.status).toBe(409);
    expect(await errorCode(merged)).toBe('GIT_NOT_LINEAR');
    const garbage = await api(empty, '/fs/git/receive', { method: 'POST', body: 'commit refs/heads/main\nmark :1\nbogus\n' });
    expect(garbage.status).toBe(400);
    expect(await errorCode(garbage)).toBe('GIT_STREAM_INVALID');
    expect(((await (await api(empty, '/fs/snapshots')).json()) as { items: unknown[] }).items).toEqual([]);
    expect(((await (await api(empty, '/fs/dir?path=')).json()) as { items: unknown[] }).items).toEqual([]);
    expect(await readFile(join(m, 'a.txt'), 'utf8')).toBe('a\n');
  });

  it('syncs the project with an ordinary git remote: push REMOTE publishes it, pull REMOTE brings commits in', async () => {
    const synced = (await ok<{ projectId: string }>(['project', 'create', 'synced'])).projectId;
    await writeFile(join(dir.path, 'r.txt'), 'results v1\n');
    await ok(['put', join(dir.path, 'r.txt'), 'results.txt', '--project', synced]);
    const snap = await ok<{ snapshotId: string }>(['snapshot', 'create', '-m', 'v1', '--project', synced]);
    await ok(['tag', 'add', snap.snapshotId, 'paper-v1', '--project', synced]);
    const bare = join(dir.path, 'origin.git');
    await git(dir.path, dir.path, ['init', '-q', '--bare', '-b', 'main', bare]);
    const local = join(dir.path, 'synced');
    await ok(['git', 'clone', synced, local]);
    await git(local, dir.path, ['remote', 'add', 'origin', bare]);

    const published = await ok<{ head: string }>(['git', 'push', 'origin'], local);
    expect((await git(bare, dir.path, ['rev-parse', 'main'])).toString().trim()).toBe(published.head);
    expect((await git(bare, dir.path, ['rev-parse', 'paper-v1^{commit}'])).toString().trim()).toBe(published.head);

    // a collaborator commits on the git remote; pull REMOTE brings it into the project as a snapshot
    const other = join(dir.path, 'collaborator');
    await git(dir.path, dir.path, ['clone', '-q', bare, other]);
    await writeFile(join(other, 'results.txt'), 'results v2\n');
    const theirs = await commitAll(other, 'v2 from the collaborator', '2026-04-01T08:00:00+0100');
    await git(other, dir.path, ['push', '-q', 'origin', 'main']);
    const pulled = await ok<{ toProject: { applied: Array<{ commitId: string }> } }>(['git', 'pull', 'origin'], local);
    expect(pulled.toProject.applied.map((a) => a.commitId)).toEqual([theirs]);
    expect(await (await api(synced, '/fs/read?path=results.txt')).text()).toBe('results v2\n');
    const refs = (await (await api(synced, '/fs/git/refs')).json()) as { head: { commitId: string } };
    expect(refs.head.commitId).toBe(theirs);
  }, 180_000);
});
