// Watch mode brings what the engine records elsewhere to disk (issue 13 item 1): a snapshot restore,
// `strata put/rm/mv`, a file restore — through the CLI against the running daemon, and while the
// daemon is down. The directory follows; the watcher does not take those writes for new local
// changes; an edit not versioned yet is versioned before it is replaced, so nothing is lost.

import { mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openLocalEngine } from '../engine/local.js';
import { baseEnv, MAIN, startListening } from './cli-harness.js';
import { sh, waitFor } from './daemon-harness.js';

type Daemon = Awaited<ReturnType<typeof startListening>>;
interface Version {
  versionId: string;
  kind: string;
  contentHash: string | null;
}

const exists = (path: string) => stat(path).then(
  () => true,
  () => false,
);
const readOrNull = (path: string) => readFile(path, 'utf8').catch(() => null);

describe('watch mode: engine changes reach the directory', () => {
  let root: string;
  let dir: string;
  let env: NodeJS.ProcessEnv;
  let daemon: Daemon | undefined;
  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'strata-materialize-'));
    env = { ...baseEnv(join(root, 'config')), STRATA_HOME: join(root, 'home') };
    dir = join(root, 'thesis');
    await mkdir(dir);
  });
  afterAll(async () => {
    if (daemon && daemon.child.exitCode === null) daemon.child.kill('SIGKILL');
    await rm(root, { recursive: true, force: true });
  });
  const strata = (args: string[], allowFail = false) => sh(process.execPath, [MAIN, ...args], { cwd: dir, env, allowFail, timeoutMs: 30_000 });
  const json = async <T>(args: string[]): Promise<T> => JSON.parse((await strata([...args, '--json'])).stdout) as T;
  const history = async (path: string) => (await json<{ items: Version[] }>(['history', path])).items;
  const versionedAs = (path: string, content: string) =>
    waitFor(`${path} versioned as ${JSON.stringify(content)}`, async () => {
      const r = await strata(['cat', path], true);
      return r.code === 0 && r.stdout === content ? true : undefined;
    }, 20_000);
  const onDisk = (what: string, check: () => Promise<boolean>) => waitFor(what, async () => ((await check()) ? true : undefined), 20_000);
  /** Everything the watcher had to do is done: a fresh write after ours is versioned. */
  let marker = 0;
  const quiet = async () => {
    marker += 1;
    await writeFile(join(dir, 'marker.txt'), `${marker}\n`);
    await versionedAs('marker.txt', `${marker}\n`);
  };

  it('a snapshot restore rewrites, re-creates and removes files on disk, and is not captured again', async () => {
    await strata(['init', dir]);
    await mkdir(join(dir, 'data', 'raw'), { recursive: true });
    await writeFile(join(dir, 'analysis.m'), 'x = 1;\n');
    await writeFile(join(dir, 'data', 'raw', 'b.csv'), '1,2\n');
    await writeFile(join(dir, 'run.sh'), '#!/bin/sh\necho good\n', { mode: 0o755 });
    daemon = await startListening(['daemon', '--listen', '127.0.0.1:0'], env);
    await versionedAs('analysis.m', 'x = 1;\n');
    await versionedAs('data/raw/b.csv', '1,2\n');
    await versionedAs('run.sh', '#!/bin/sh\necho good\n');
    const good = await json<{ snapshotId: string }>(['snapshot', 'create', '-m', 'good state']);

    await writeFile(join(dir, 'analysis.m'), 'x = broken;\n');
    await writeFile(join(dir, 'run.sh'), '#!/bin/sh\necho broken\n');
    await rm(join(dir, 'data'), { recursive: true });
    await writeFile(join(dir, 'junk.tmp.m'), 'junk\n');
    await versionedAs('analysis.m', 'x = broken;\n');
    await versionedAs('junk.tmp.m', 'junk\n');
    await waitFor('data deleted', async () => ((await strata(['cat', 'data/raw/b.csv'], true)).code !== 0 ? true : undefined), 20_000);

    const restored = await json<{ changed: number }>(['snapshot', 'restore', good.snapshotId]);
    expect(restored.changed).toBe(4);
    await onDisk('the directory is the good state', async () =>
      (await readOrNull(join(dir, 'analysis.m'))) === 'x = 1;\n' &&
      (await readOrNull(join(dir, 'data', 'raw', 'b.csv'))) === '1,2\n' &&
      (await readOrNull(join(dir, 'run.sh'))) === '#!/bin/sh\necho good\n' &&
      !(await exists(join(dir, 'junk.tmp.m'))),
    );
    expect((await stat(join(dir, 'run.sh'))).mode & 0o111).not.toBe(0);
    await quiet();
    // the restore's writes are the newest versions: the watcher did not version them again
    const analysis = await history('analysis.m');
    expect(analysis.map((v) => v.kind)).toEqual(['snapshot-restore', 'write', 'write']);
    expect((await history('data/raw/b.csv')).map((v) => v.kind)).toEqual(['snapshot-restore', 'delete', 'write']);
    const status = await json<{ projects: Array<{ incoming: { applied: number; last: { result: string } | null } }> }>(['status']);
    expect(status.projects[0]!.incoming.applied).toBeGreaterThanOrEqual(4);
    const diff = await json<{ items: Array<{ path: string }> }>(['snapshot', 'diff', good.snapshotId]);
    expect(diff.items.map((d) => d.path)).toEqual(['marker.txt']);
    expect(await exists(join(dir, '.strata', 'incoming'))).toBe(true);
  }, 120_000);

  it('put, rm and mv through the CLI reach the disk', async () => {
    await writeFile(join(root, 'from-elsewhere.txt'), 'put by the CLI\n');
    await strata(['put', join(root, 'from-elsewhere.txt'), 'notes/put.txt']);
    await strata(['rm', 'run.sh']);
    await strata(['mv', 'analysis.m', 'src/analysis.m']);
    await onDisk('put, rm and mv applied', async () =>
      (await readOrNull(join(dir, 'notes', 'put.txt'))) === 'put by the CLI\n' &&
      !(await exists(join(dir, 'run.sh'))) &&
      !(await exists(join(dir, 'analysis.m'))) &&
      (await readOrNull(join(dir, 'src', 'analysis.m'))) === 'x = 1;\n',
    );
    await quiet();
    expect((await history('notes/put.txt')).length).toBe(1);
    expect((await history('src/analysis.m')).length).toBe(1);
    expect((await strata(['cat', 'run.sh'], true)).code).not.toBe(0);
  }, 120_000);

  it('a path that cannot be written is reported and tried again until it can', async () => {
    await mkdir(join(dir, 'locked'));
    // immutable: not even root may create a file in it (chattr, ext4)
    await sh('chattr', ['+i', join(dir, 'locked')]);
    try {
      await writeFile(join(root, 'l.txt'), 'for the locked dir\n');
      await strata(['put', join(root, 'l.txt'), 'locked/l.txt']);
      const warned = await waitFor('the warning in status', async () => {
        const projects = (JSON.parse((await strata(['status', '--json'])).stdout) as { projects: Array<{ warnings: string[] }> }).projects;
        return projects[0]!.warnings.find((w) => w.includes('"locked/l.txt"'));
      }, 20_000);
      expect(warned).toMatch(/could not bring "locked\/l\.txt" from the project to disk: .*\(trying again\)/);
      expect(await exists(join(dir, 'locked', 'l.txt'))).toBe(false);
    } finally {
      await sh('chattr', ['-i', join(dir, 'locked')]);
    }
    await onDisk('the retry wrote it', async () => (await readOrNull(join(dir, 'locked', 'l.txt'))) === 'for the locked dir\n');
    // and the warning is gone with the problem
    const after = (JSON.parse((await strata(['status', '--json'])).stdout) as { projects: Array<{ warnings: string[] }> }).projects;
    expect(after[0]!.warnings.join('\n')).not.toMatch(/locked\/l\.txt/);
  }, 120_000);

  it('after a restart: changes made while the daemon was down reach the disk, and a local edit is versioned, not lost', async () => {
    const statusBefore = await json<{ projects: Array<{ state: string }> }>(['status']);
    expect(statusBefore.projects[0]!.state).toBe('watching');
    daemon!.child.kill('SIGTERM');
    await waitFor('daemon stopped', () => (daemon!.child.exitCode !== null ? true : undefined), 20_000);

    // while it is down, another process on the same home changes the project (a file restore, a new
    // file, a write over a path), and a local edit of that path is made that no one versioned yet
    const put = (await readFile(join(dir, 'notes', 'put.txt'), 'utf8'));
    expect(put).toBe('put by the CLI\n');
    const { projectId } = JSON.parse(await readFile(join(dir, '.strata', 'project.json'), 'utf8')) as { projectId: string };
    const other = await openLocalEngine({ home: join(root, 'home') });
    try {
      const actor = { id: 'other-process', kind: 'local' as const, name: 'another process' };
      const first = (await other.engine.history({ projectId, path: 'notes/put.txt' })).items[0]!;
      await other.engine.writeFile({ projectId, path: 'notes/put.txt', actor, content: Buffer.from('second\n') });
      await other.engine.writeFile({ projectId, path: 'elsewhere.txt', actor, content: Buffer.from('second\n') });
      await other.engine.restoreVersion({ projectId, versionId: first.versionId, actor });
      await other.engine.writeFile({ projectId, path: 'src/analysis.m', actor, content: Buffer.from('second\n') });
    } finally {
      await other.close();
    }
    await writeFile(join(dir, 'src', 'analysis.m'), 'x = edited offline;\n');

    daemon = await startListening(['daemon', '--listen', '127.0.0.1:0'], env);
    await onDisk('the engine changes are on disk', async () =>
      (await readOrNull(join(dir, 'elsewhere.txt'))) === 'second\n' && (await readOrNull(join(dir, 'notes', 'put.txt'))) === 'put by the CLI\n',
    );
    await quiet();
    // the offline edit of src/analysis.m is in history, whatever ended up current
    const analysis = await history('src/analysis.m');
    const contents = await Promise.all(analysis.map(async (v) => (await strata(['cat', 'src/analysis.m', '--version', v.versionId])).stdout));
    expect(contents).toContain('x = edited offline;\n');
    expect(contents).toContain('second\n');
    const current = (await strata(['cat', 'src/analysis.m'])).stdout;
    expect(await readOrNull(join(dir, 'src', 'analysis.m'))).toBe(current);
  }, 120_000);
});
