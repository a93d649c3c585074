// The CLI end to end: a real `strata serve` child process over a temp home, the compiled CLI run as
// a child process per command. Steps depend on each other (the workflow a user follows) and run in
// file order.

import { createHash } from 'node:crypto';
import { symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { baseEnv, parseJson, type RunResult, runCli, type ServeHandle, startServe, tempDir } from './cli-harness.js';

interface Version {
  versionId: string;
  path: string;
  kind: string;
  contentHash: string | null;
  size: number;
  executable: boolean;
}

let dir: { path: string; remove(): Promise<void> };
let server: ServeHandle | undefined;
let env: NodeJS.ProcessEnv;
let apiKey = '';
let projectId = '';
const outputs: RunResult[] = [];

async function cli(args: string[], input?: string | Buffer): Promise<RunResult> {
  const result = await runCli(args, env, input === undefined ? {} : { input });
  outputs.push(result);
  return result;
}

async function ok<T>(args: string[], input?: string | Buffer): Promise<T> {
  const result = await cli([...args, '--json'], input);
  if (result.code !== 0) throw new Error(`strata ${args.join(' ')} exited ${result.code}: ${result.stderr}`);
  return parseJson<T>(result);
}

beforeAll(async () => {
  dir = await tempDir('strata-cli-');
  const home = join(dir.path, 'home');
  env = baseEnv(join(dir.path, 'config'));
  const boot = await runCli(['admin', 'bootstrap', '--home', home, '--json'], env);
  expect(boot.code, boot.stderr).toBe(0);
  const created = parseJson<{ apiKey: string; orgId: string }>(boot);
  expect(created.apiKey).toMatch(/^rk\.[a-z0-9-]+\.[^.]+\.[^.]+$/);
  expect(created.orgId).toBeTruthy();
  apiKey = created.apiKey;
  server = await startServe(home, env);
  env = { ...env, STRATA_SERVER_URL: server.url, STRATA_API_KEY: apiKey };
});

afterAll(async () => {
  await server?.stop();
  await dir?.remove();
}, 30_000);

describe('strata CLI against a live server', () => {
  it('creates a project and lists it', async () => {
    const project = await ok<{ projectId: string; name: string }>(['project', 'create', 'thesis']);
    expect(project.name).toBe('thesis');
    projectId = project.projectId;
    env = { ...env, STRATA_PROJECT_ID: projectId };
    const list = await ok<{ items: Array<{ projectId: string }> }>(['project', 'list']);
    expect(list.items.map((p) => p.projectId)).toContain(projectId);
    const table = await cli(['project', 'list']);
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(/PROJECT ID\s+NAME/);
    expect(table.stdout).toContain('thesis');
  });

  it('puts a file and stdin, cats them back, lists the directory', async () => {
    const local = join(dir.path, 'fit.m');
    await writeFile(local, 'x = 1;\n');
    const first = await ok<{ version: Version }>(['put', local, 'analysis/fit.m']);
    expect(first.version).toMatchObject({ path: 'analysis/fit.m', kind: 'write', size: 7 });
    expect(first.version.executable).toBe(false);
    const second = await ok<{ version: Version }>(['put', '-', 'analysis/fit.m'], 'x = 2;\n');
    expect(second.version.size).toBe(7);
    expect(second.version.versionId).not.toBe(first.version.versionId);

    expect((await cli(['cat', 'analysis/fit.m'])).stdout).toBe('x = 2;\n');
    const old = await cli(['cat', 'analysis/fit.m', '--version', first.version.versionId]);
    expect(old.stdout).toBe('x = 1;\n');
    const asJson = await ok<{ encoding: string; content: string; versionId: string }>(['cat', 'analysis/fit.m']);
    expect(asJson).toMatchObject({ encoding: 'utf8', content: 'x = 2;\n', versionId: second.version.versionId });

    const script = join(dir.path, 'run.sh');
    await writeFile(script, '#!/bin/sh\necho hi\n', { mode: 0o755 });
    expect((await ok<{ version: Version }>(['put', script, 'tools/run.sh'])).version.executable).toBe(true);
    expect((await ok<{ version: Version }>(['put', '-', 'tools/gen.sh', '--executable'], 'echo\n')).version.executable).toBe(true);

    const root = await ok<{ items: Array<{ name: string; type: string }> }>(['ls']);
    expect(root.items).toContainEqual(expect.objectContaining({ name: 'analysis', type: 'directory' }));
    const sub = await cli(['ls', 'analysis']);
    expect(sub.code).toBe(0);
    expect(sub.stdout).toMatch(/7 B\s+\S+ \S+Z\s+fit\.m/);
  });

  it('streams a 12 MiB binary file both ways without changing a byte', async () => {
    const bytes = Buffer.alloc(12 * 1024 * 1024);
    for (let i = 0; i < bytes.length; i += 4096) bytes.writeUInt32LE(i * 2654435761 >>> 0, i);
    const local = join(dir.path, 'big.bin');
    await writeFile(local, bytes);
    const put = await ok<{ version: Version }>(['put', local, 'data/big.bin']);
    expect(put.version.size).toBe(bytes.length);
    const digest = (b: Buffer) => createHash('sha256').update(b).digest('hex');
    const back = await runCli(['cat', 'data/big.bin'], env);
    expect(back.code, back.stderr).toBe(0);
    expect(back.stdoutBytes.length).toBe(bytes.length);
    expect(digest(back.stdoutBytes)).toBe(digest(bytes));
    const asJson = await ok<{ encoding: string; size: number }>(['cat', 'data/big.bin']);
    expect(asJson).toMatchObject({ encoding: 'base64', size: bytes.length });
  });

  it('shows history newest first, paginates, and restores an old version', async () => {
    const history = await ok<{ items: Version[] }>(['history', 'analysis/fit.m']);
    expect(history.items.map((v) => v.kind)).toEqual(['write', 'write']);
    const [newest, oldest] = history.items;
    const limited = await ok<{ items: Version[]; nextCursor?: string }>(['history', '--limit', '1']);
    expect(limited.items).toHaveLength(1);
    expect(limited.nextCursor).toBeTruthy();
    const all = await ok<{ items: Version[]; nextCursor?: string }>(['history', '--all']);
    expect(all.items.length).toBeGreaterThanOrEqual(3);
    expect(all.nextCursor).toBeUndefined();

    const restored = await ok<{ version: Version }>(['restore', oldest!.versionId]);
    expect(restored.version).toMatchObject({ kind: 'restore', path: 'analysis/fit.m' });
    expect((await cli(['cat', 'analysis/fit.m'])).stdout).toBe('x = 1;\n');
    expect(newest!.versionId).not.toBe(restored.version.versionId);
  });

  it('removes and renames files; history keeps the tombstone', async () => {
    await ok(['put', '-', 'notes.md'], '# notes\n');
    const removed = await ok<{ version: Version }>(['rm', 'notes.md']);
    expect(removed.version).toMatchObject({ kind: 'delete', contentHash: null });
    const gone = await cli(['cat', 'notes.md']);
    expect(gone.code).toBe(3);
    expect(gone.stderr).toMatch(/^strata: .+ \(PATH_NOT_FOUND\)$/m);
    await ok(['restore', (await ok<{ items: Version[] }>(['history', 'notes.md'])).items[1]!.versionId]);
    expect((await cli(['cat', 'notes.md'])).stdout).toBe('# notes\n');

    const moved = await ok<{ deleted: Version; created: { version: Version } }>(['mv', 'notes.md', 'docs/notes.md']);
    expect(moved.created.version.path).toBe('docs/notes.md');
    expect((await cli(['cat', 'docs/notes.md'])).stdout).toBe('# notes\n');
    expect((await cli(['cat', 'notes.md'])).code).toBe(3);

    await ok(['put', '-', 'docs/other.md'], 'other\n');
    const clash = await cli(['mv', 'docs/other.md', 'docs/notes.md', '--json']);
    expect(clash.code).toBe(4);
    expect(parseJson<{ error: { code: string } }>(clash).error.code).toBe('PATH_EXISTS');
    await ok(['mv', 'docs/other.md', 'docs/notes.md', '--overwrite']);
    expect((await cli(['cat', 'docs/notes.md'])).stdout).toBe('other\n');
  });

  it('creates, lists, shows, diffs and restores snapshots; tags them', async () => {
    const first = await ok<{ snapshotId: string; seq: number; fileCount: number }>(['snapshot', 'create', '-m', 'before fit v3']);
    expect(first.fileCount).toBeGreaterThanOrEqual(3);
    await ok(['put', '-', 'analysis/fit.m'], 'x = 3;\n');
    await ok(['put', '-', 'analysis/new.py'], 'print(1)\n');

    const diff = await ok<{ items: Array<{ path: string; change: string }> }>(['snapshot', 'diff', first.snapshotId]);
    expect(diff.items).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ path: 'analysis/fit.m', change: 'modified' }),
        expect.objectContaining({ path: 'analysis/new.py', change: 'added' }),
      ]),
    );
    const second = await ok<{ snapshotId: string; seq: number }>(['snapshot', 'create']);
    expect(second.seq).toBe(first.seq + 1);
    const between = await ok<{ items: Array<{ path: string }> }>(['snapshot', 'diff', first.snapshotId, second.snapshotId]);
    expect(between.items.map((i) => i.path).sort()).toEqual(['analysis/fit.m', 'analysis/new.py']);

    const list = await ok<{ items: Array<{ snapshotId: string }> }>(['snapshot', 'list']);
    expect(list.items.map((s) => s.snapshotId)).toEqual([second.snapshotId, first.snapshotId]);

    const tagged = await ok<{ tag: string; snapshotId: string }>(['tag', 'add', first.snapshotId, 'submitted']);
    expect(tagged).toEqual({ tag: 'submitted', snapshotId: first.snapshotId });
    const taken = await cli(['tag', 'add', second.snapshotId, 'submitted']);
    expect(taken.code).toBe(4);
    expect(taken.stderr).toContain('(TAG_TAKEN)');
    expect((await ok<{ items: unknown[] }>(['tag', 'list'])).items).toEqual([{ tag: 'submitted', snapshotId: first.snapshotId }]);

    const shown = await ok<{ snapshot: { snapshotId: string; tags: string[] }; entries: Array<{ path: string }> }>([
      'snapshot',
      'show',
      'submitted',
    ]);
    expect(shown.snapshot).toMatchObject({ snapshotId: first.snapshotId, tags: ['submitted'] });
    expect(shown.entries.map((e) => e.path)).toContain('analysis/fit.m');
    expect(shown.entries.map((e) => e.path)).not.toContain('analysis/new.py');

    const restored = await ok<{ changed: number }>(['snapshot', 'restore', 'submitted']);
    expect(restored.changed).toBe(2);
    expect((await cli(['cat', 'analysis/fit.m'])).stdout).toBe('x = 1;\n');
    expect((await cli(['cat', 'analysis/new.py'])).code).toBe(3);

    expect((await cli(['tag', 'rm', 'submitted'])).code).toBe(0);
    expect((await ok<{ items: unknown[] }>(['tag', 'list'])).items).toEqual([]);
    const again = await cli(['tag', 'rm', 'submitted']);
    expect(again.code).toBe(3);
    expect(again.stderr).toContain('(TAG_NOT_FOUND)');
  });

  it('gets and sets retention', async () => {
    expect(await ok(['retention', 'get'])).toEqual({ projectId, maxVersions: 0 });
    // the setting, and what applying it pruned (issue 18)
    expect(await ok(['retention', 'set', '3'])).toStrictEqual({ projectId, maxVersions: 3, pruned: { versions: expect.any(Number), bytes: expect.any(Number) } });
    expect(await ok(['retention', 'get'])).toEqual({ projectId, maxVersions: 3 });
    const human = await cli(['retention', 'get']);
    expect(human.stdout.trim()).toBe('retention: 3 versions/path');
    const bad = await cli(['retention', 'set', 'lots']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('(USAGE)');
  });

  it('creates, uses, rotates and revokes API keys', async () => {
    const created = await ok<{ apiKey: string; key: { keyId: string; projectId: string | null } }>([
      'keys',
      'create',
      '--purpose',
      'ci',
      '--project',
      projectId,
    ]);
    expect(created.key.projectId).toBe(projectId);
    const asCi = { STRATA_API_KEY: created.apiKey };
    expect((await runCli(['ls', '--json'], env, { env: asCi })).code).toBe(0);

    const human = await cli(['keys', 'create', '--purpose', 'human-output']);
    expect(human.code).toBe(0);
    expect(human.stdout.trim()).toMatch(/^rk\.\S+$/); // the secret alone on stdout
    expect(human.stderr).toContain('shown only this once');

    const list = await cli(['keys', 'list', '--json']);
    const keyIds = parseJson<{ items: Array<{ keyId: string }> }>(list).items.map((k) => k.keyId);
    expect(keyIds).toContain(created.key.keyId);
    expect(list.stdout).not.toContain(created.apiKey);

    const rotated = await ok<{ apiKey: string; key: { keyId: string } }>(['keys', 'rotate', created.key.keyId, '--grace-seconds', '0']);
    expect(rotated.apiKey).not.toBe(created.apiKey);
    expect((await runCli(['ls'], env, { env: { STRATA_API_KEY: rotated.apiKey } })).code).toBe(0);
    const oldKey = await runCli(['ls', '--json'], env, { env: asCi });
    expect(oldKey.code).toBe(5);
    expect(parseJson<{ error: { code: string } }>(oldKey).error.code).toBe('UNAUTHENTICATED');

    const revoked = await ok<{ keyId: string; revokedAt: string | null }>(['keys', 'revoke', rotated.key.keyId]);
    expect(revoked.revokedAt).toBeTruthy();
    expect((await runCli(['ls'], env, { env: { STRATA_API_KEY: rotated.apiKey } })).code).toBe(5);
  });

  it('runs fsck and gc through the server', async () => {
    const fsck = await ok<{ ok: boolean; objectsChecked: number }>(['fsck']);
    expect(fsck.ok).toBe(true);
    expect(fsck.objectsChecked).toBeGreaterThan(0);
    const gc = await ok<{ objectsScanned: number; objectsDeleted: number; bytesFreed: number }>(['gc']);
    expect(gc.objectsScanned).toBeGreaterThan(0);
    const human = await cli(['fsck']);
    expect(human.stdout).toMatch(/^fsck: \d+ objects? and \d+ references? checked: ok$/m);
  });

  it('puts a local symbolic link as a link (never what it points to); ls, history, cat and diff show it as one', async () => {
    const before = await ok<{ snapshotId: string }>(['snapshot', 'create', '-m', 'before links']);
    const link = join(dir.path, 'latest-link');
    await symlink('../runs/7/out.csv', link);
    const put = await ok<{ version: Version & { symlink: boolean } }>(['put', link, 'links/latest']);
    expect(put.version).toMatchObject({ symlink: true, executable: false, size: 17 });
    const fromStdin = await ok<{ version: Version & { symlink: boolean } }>(['put', '-', 'links/abs', '--symlink'], '/scratch/data');
    expect(fromStdin.version).toMatchObject({ symlink: true, size: 13 });
    const plain = await ok<{ version: Version & { symlink: boolean } }>(['put', '-', 'links/file.txt'], 'text\n');
    expect(plain.version.symlink).toBe(false);
    const notALink = await cli(['put', join(dir.path, 'run.sh'), 'links/x', '--symlink']);
    expect(notALink.code).toBe(2);
    expect(notALink.stderr).toMatch(/not a symbolic link/);

    const ls = await cli(['ls', 'links']);
    expect(ls.code, ls.stderr).toBe(0);
    expect(ls.stdout).toMatch(/\blatest -> \.\.\/runs\/7\/out\.csv$/m);
    expect(ls.stdout).toMatch(/\babs -> \/scratch\/data$/m);
    expect(ls.stdout).toMatch(/\bfile\.txt$/m);
    const lsJson = await ok<{ items: Array<{ name: string; symlink: boolean }> }>(['ls', 'links']);
    expect(lsJson.items.map((item) => [item.name, item.symlink])).toEqual([
      ['abs', true],
      ['file.txt', false],
      ['latest', true],
    ]);
    const history = await cli(['history', 'links/latest']);
    expect(history.stdout).toMatch(/TIME\s+KIND\s+TYPE\s+SIZE/);
    expect(history.stdout).toMatch(/\bwrite\s+link\s+17 B\b/);
    expect((await ok<{ items: Array<{ symlink: boolean }> }>(['history', 'links/latest'])).items.map((v) => v.symlink)).toEqual([true]);
    expect((await cli(['cat', 'links/latest'])).stdout).toBe('../runs/7/out.csv');
    expect(await ok(['cat', 'links/latest'])).toMatchObject({ symlink: true, content: '../runs/7/out.csv' });
    expect(await ok(['cat', 'links/file.txt'])).toMatchObject({ symlink: false });
    const diff = await cli(['snapshot', 'diff', before.snapshotId]);
    expect(diff.stdout).toMatch(/^A\s+-\s+link\s+links\/latest$/m);
    expect(diff.stdout).toMatch(/^A\s+-\s+5 B\s+links\/file\.txt$/m);
  });

  it('never prints the bootstrap API key from commands that do not create one', () => {
    expect(outputs.length).toBeGreaterThan(30);
    for (const result of outputs) {
      expect(result.stdout).not.toContain(apiKey);
      expect(result.stderr).not.toContain(apiKey);
    }
    const secret = apiKey.slice(apiKey.lastIndexOf('.') + 1);
    expect(server!.stderr()).not.toContain(secret);
  });
});
