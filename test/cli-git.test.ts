// `strata git clone` and `strata git pull` against a live `strata serve`, with the real git binary:
// the clone holds one commit per snapshot with the snapshot's files; a pull brings only the new
// snapshots and fast-forwards the work tree; refs name the same commits as the clone has.
import { mkdir, readdir, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { baseEnv, parseJson, runCli, type ServeHandle, startServe, tempDir } from './cli-harness.js';
import { git } from './helpers/git.js';

let dir: { path: string; remove(): Promise<void> };
let server: ServeHandle | undefined;
let env: NodeJS.ProcessEnv;
let projectId = '';

async function ok<T>(args: string[], cwd?: string): Promise<T> {
  const result = await runCli([...args, '--json'], env, { timeoutMs: 60_000, ...(cwd === undefined ? {} : { cwd }) });
  if (result.code !== 0) throw new Error(`strata ${args.join(' ')} exited ${result.code}: ${result.stderr}`);
  return parseJson<T>(result);
}

beforeAll(async () => {
  dir = await tempDir('strata-cli-git-');
  const home = join(dir.path, 'home');
  env = baseEnv(join(dir.path, 'config'));
  const boot = await runCli(['admin', 'bootstrap', '--home', home, '--json'], env);
  expect(boot.code, boot.stderr).toBe(0);
  server = await startServe(home, env);
  env = { ...env, STRATA_SERVER_URL: server.url, STRATA_API_KEY: parseJson<{ apiKey: string }>(boot).apiKey, HOME: dir.path, GIT_CONFIG_NOSYSTEM: '1' };
  projectId = (await ok<{ projectId: string }>(['project', 'create', 'gitty'])).projectId;
  env = { ...env, STRATA_PROJECT_ID: projectId };
}, 60_000);

afterAll(async () => {
  await server?.stop();
  await dir?.remove();
}, 30_000);

describe('strata git', () => {
  const clone = () => join(dir.path, 'clone');
  const put = async (path: string, text: string) => {
    const local = join(dir.path, 'src.tmp');
    await writeFile(local, text);
    await ok(['put', local, path]);
  };

  it('clones the snapshot chain: one commit per snapshot, tags, the latest files in the work tree', async () => {
    await put('fit.m', 'x = 1;\n');
    await put('data/notes.md', '# notes\n');
    await ok(['snapshot', 'create', '-m', 'first']);
    await put('fit.m', 'x = 2;\n');
    const second = await ok<{ snapshotId: string }>(['snapshot', 'create', '-m', 'second']);
    await ok(['tag', 'add', second.snapshotId, 'v2']);

    const result = await ok<{ head: string; commits: number }>(['git', 'clone', projectId, clone()]);
    expect(result.commits).toBe(2);
    expect(await readFile(join(clone(), 'fit.m'), 'utf8')).toBe('x = 2;\n');
    expect(await readFile(join(clone(), 'data/notes.md'), 'utf8')).toBe('# notes\n');
    const log = (await git(clone(), dir.path, ['log', '--format=%s', 'main'])).toString().trim().split('\n');
    expect(log).toEqual(['second', 'first']);
    expect((await git(clone(), dir.path, ['rev-parse', 'v2^{commit}'])).toString().trim()).toBe(result.head);
    expect((await git(clone(), dir.path, ['status', '--porcelain'])).toString()).toBe('');
    const again = await ok<{ head: string }>(['git', 'clone', projectId, join(dir.path, 'clone2')]);
    expect(again.head).toBe(result.head);
  });

  it('pulls only the new snapshots and fast-forwards the work tree', async () => {
    const up = await ok<{ updated: boolean }>(['git', 'pull'], clone());
    expect(up.updated).toBe(false);
    await put('fit.m', 'x = 3;\n');
    await put('new.txt', 'new\n');
    await ok(['snapshot', 'create', '-m', 'third']);
    const pulled = await ok<{ updated: boolean; commits: number; head: string }>(['git', 'pull'], clone());
    expect(pulled).toMatchObject({ updated: true, commits: 1 });
    expect(await readFile(join(clone(), 'fit.m'), 'utf8')).toBe('x = 3;\n');
    expect(await readFile(join(clone(), 'new.txt'), 'utf8')).toBe('new\n');
    expect((await git(clone(), dir.path, ['rev-list', '--count', 'main'])).toString().trim()).toBe('3');
    // the same commit a fresh clone gets: the export is deterministic
    const fresh = await ok<{ head: string }>(['git', 'clone', projectId, join(dir.path, 'clone3')]);
    expect(fresh.head).toBe(pulled.head);
    await git(clone(), dir.path, ['fsck', '--strict', '--no-progress']);
  });

  it('a pull that cannot update the work tree changes nothing and names the files (issue 13 item 13)', async () => {
    await put('fit.m', 'x = upstream;\n');
    await ok(['snapshot', 'create', '-m', 'upstream change']);
    await writeFile(join(clone(), 'fit.m'), 'x = my local edit;\n');
    const head = (await git(clone(), dir.path, ['rev-parse', 'main'])).toString().trim();
    const tags = (await git(clone(), dir.path, ['for-each-ref', 'refs/tags'])).toString();
    for (let attempt = 0; attempt < 2; attempt++) {
      // twice: the second pull must not say "up to date"
      const result = await runCli(['git', 'pull', '--json'], env, { cwd: clone() });
      expect(result.code).toBe(4);
      const error = JSON.parse(result.stdout || result.stderr).error as { code: string; message: string; details: { paths: string[] } };
      expect(error.code).toBe('GIT_WORK_TREE_CONFLICT');
      expect(error.details.paths).toEqual(['fit.m']);
      expect(error.message).toContain('changed nothing');
      expect((await git(clone(), dir.path, ['rev-parse', 'main'])).toString().trim()).toBe(head);
      expect((await git(clone(), dir.path, ['for-each-ref', 'refs/tags'])).toString()).toBe(tags);
      expect(await readFile(join(clone(), 'fit.m'), 'utf8')).toBe('x = my local edit;\n');
    }
    // a `git commit -am` now would commit the local edit on top of the old main, as the user meant
    expect((await git(clone(), dir.path, ['diff', '--name-only', 'HEAD'])).toString().trim()).toBe('fit.m');
    await git(clone(), dir.path, ['checkout', '--', 'fit.m']);
    const pulled = await ok<{ updated: boolean; commits: number }>(['git', 'pull'], clone());
    expect(pulled).toMatchObject({ updated: true, commits: 1 });
    expect(await readFile(join(clone(), 'fit.m'), 'utf8')).toBe('x = upstream;\n');
  }, 180_000);

  it('a pull brings tags added or moved on commits the clone already has (issue 13 item 16)', async () => {
    const snapshots = (await ok<{ items: Array<{ snapshotId: string; message: string }> }>(['snapshot', 'list'])).items;
    const first = snapshots.find((s) => s.message === 'first')!;
    const third = snapshots.find((s) => s.message === 'third')!;
    await ok(['tag', 'add', first.snapshotId, 'submitted']);
    const pulled = await ok<{ updated: boolean; commits: number; tags: string[] }>(['git', 'pull'], clone());
    expect(pulled).toMatchObject({ updated: true, commits: 0, tags: ['submitted'] });
    const firstCommit = (await git(clone(), dir.path, ['rev-list', '--max-parents=0', 'main'])).toString().trim();
    expect((await git(clone(), dir.path, ['rev-parse', 'submitted^{commit}'])).toString().trim()).toBe(firstCommit);
    // moved: removed and added on another snapshot
    await ok(['tag', 'rm', 'submitted']);
    await ok(['tag', 'add', third.snapshotId, 'submitted']);
    const moved = await ok<{ tags: string[] }>(['git', 'pull'], clone());
    expect(moved.tags).toEqual(['submitted']);
    expect((await git(clone(), dir.path, ['log', '-1', '--format=%s', 'submitted'])).toString().trim()).toBe('third');
    const again = await ok<{ updated: boolean }>(['git', 'pull'], clone());
    expect(again.updated).toBe(false);
  });

  it('refuses to pull over a history that diverged, changing nothing', async () => {
    await git(clone(), dir.path, ['commit', '-q', '--allow-empty', '-m', 'local only']);
    const head = (await git(clone(), dir.path, ['rev-parse', 'main'])).toString().trim();
    await put('fit.m', 'x = 4;\n');
    await ok(['snapshot', 'create', '-m', 'fourth']);
    const result = await runCli(['git', 'pull', '--json'], env, { cwd: clone() });
    expect(result.code).toBe(4);
    expect(JSON.parse(result.stdout || result.stderr).error.code).toBe('GIT_UNKNOWN_COMMIT');
    expect((await git(clone(), dir.path, ['rev-parse', 'main'])).toString().trim()).toBe(head);
  });

  it('a clone that fails leaves nothing behind, so the retry works; a non-empty DIR is TARGET_NOT_EMPTY like checkout', async () => {
    const failed = async (args: string[], code: number, errorCode: string) => {
      const result = await runCli(['git', 'clone', ...args, '--json'], env, { timeoutMs: 60_000 });
      expect(result.code, result.stderr).toBe(code);
      expect(JSON.parse(result.stdout || result.stderr).error.code).toBe(errorCode);
    };
    const unknown = '01900000-0000-7000-8000-000000000000';
    // a directory the clone would make: not made
    const fresh = join(dir.path, 'retry-new', 'repo');
    await failed([unknown, fresh], 3, 'PROJECT_NOT_FOUND');
    expect(await exists(join(dir.path, 'retry-new'))).toBe(false);
    // an empty directory that was there: stays empty (no .git)
    const empty = join(dir.path, 'retry-empty');
    await mkdir(empty);
    await failed([unknown, empty], 3, 'PROJECT_NOT_FOUND');
    expect(await readdir(empty)).toEqual([]);
    for (const target of [fresh, empty]) {
      const retried = await ok<{ commits: number }>(['git', 'clone', projectId, target]);
      expect(retried.commits).toBeGreaterThan(0);
      expect(await readFile(join(target, 'fit.m'), 'utf8')).toBe('x = 4;\n');
    }
    // not empty: refused before anything is asked or made, the contents untouched
    const full = join(dir.path, 'retry-full');
    await mkdir(full);
    await writeFile(join(full, 'mine.txt'), 'mine\n');
    await failed([projectId, full], 4, 'TARGET_NOT_EMPTY');
    expect(await readdir(full)).toEqual(['mine.txt']);
  });

  it('with DIR alone, clones the current project (STRATA_PROJECT_ID here); a lone project id is refused, not taken for DIR', async () => {
    const target = join(dir.path, 'clone-default');
    const result = await ok<{ projectId: string; commits: number }>(['git', 'clone', target]);
    expect(result.projectId).toBe(projectId);
    expect(await readFile(join(target, 'fit.m'), 'utf8')).toBe('x = 4;\n');
    expect((await git(target, dir.path, ['config', '--get', 'strata.project'])).toString().trim()).toBe(projectId);
    const lone = await runCli(['git', 'clone', projectId, '--json'], env, { cwd: dir.path });
    expect(lone.code).toBe(2);
    expect(JSON.parse(lone.stdout || lone.stderr).error.code).toBe('USAGE');
    expect(await exists(join(dir.path, projectId))).toBe(false);
  });
});

const exists = (path: string) => stat(path).then(
  () => true,
  () => false,
);
