// `strata mount DIR --import` over a directory that already holds a project (issue 15): a real daemon,
// a real FUSE mount, real git. The directory's files (subdirectories, a link, an executable, a 0600
// key, an ignored log and a `.git/`) are imported — one version each — and shown through the mount;
// git works inside it; edits, additions, deletions and renames through the mount are in the directory
// after `strata unmount` (compared with an expected copy the same commands changed: diff -r
// --no-dereference, and types, modes and link targets; a FIFO stays a FIFO); mounting again imports nothing twice (an
// edit made while unmounted is one version); a kill -9 while mounted loses nothing, and the restarted
// daemon mounts over the directory again. Without --import the refusal names the flag.

import { execPath } from 'node:process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { VersionRecord } from '../engine/types.js';
import { baseEnv, MAIN, startListening } from './cli-harness.js';
import { forceUnmount, type MountedDir, mountProject, sh, waitExit, waitFor } from './mount-harness.js';

// Fixed identities and dates: the same commit in the mount and in the expected copy has the same id.
const GIT_ENV = {
  GIT_AUTHOR_NAME: 'Ada',
  GIT_AUTHOR_EMAIL: 'ada@example.org',
  GIT_COMMITTER_NAME: 'Ada',
  GIT_COMMITTER_EMAIL: 'ada@example.org',
  GIT_AUTHOR_DATE: '2026-01-01T00:00:00Z',
  GIT_COMMITTER_DATE: '2026-01-01T00:00:00Z',
  GIT_CONFIG_NOSYSTEM: '1',
  GIT_TERMINAL_PROMPT: '0',
};

// 'café.txt' in NFC is imported; the same word in NFD is another file (as on ext4) that Strata cannot
// version (not in NFC): it stays a plain file of the mount, with its own bytes.
const IMPORTED = ['.strataignore', 'README.md', 'caf\u00e9.txt', 'link', 'run.sh', 'secret.key', 'src/main.py', 'src/util/helpers.py'];

let root: string;
let dir: string;
let expected: string;
let home: string;
let env: NodeJS.ProcessEnv;
let m: MountedDir | null = null;
let daemon: ChildProcess | null = null;

/** Runs a bash script in `cwd` (the mount, or the expected copy), with git's fixed identity. */
function run(cwd: string, script: string) {
  return sh('bash', ['-euo', 'pipefail', '-c', script], { cwd, env: { ...process.env, HOME: root, ...GIT_ENV }, timeoutMs: 60_000 });
}

/** The same commands in the expected copy and in the directory (through the mount when mounted). */
async function both(script: string): Promise<void> {
  await run(expected, script);
  await run(dir, script);
}

function strata(args: string[]) {
  return sh(execPath, [MAIN, ...args, '--home', home], { cwd: root, env, allowFail: true, timeoutMs: 60_000 });
}

/**
 * `dir` holds what `expected` holds: the same content (diff -r, links compared as links) and the same
 * types, modes and link targets. `.strata/` is Strata's own; git's index records inode numbers and
 * times, so it differs between any two checkouts; `pipe` exists in the directory only.
 */
async function expectSameTree(): Promise<void> {
  const diff = await sh('diff', ['-r', '--no-dereference', '-x', '.strata', '-x', 'index', '-x', 'pipe', expected, dir], { allowFail: true, timeoutMs: 60_000 });
  expect(diff.stdout + diff.stderr).toBe('');
  expect(diff.code).toBe(0);
  const listing = async (at: string) =>
    (await sh('find', ['.', '(', '-path', './.strata', '-o', '-path', './pipe', ')', '-prune', '-o', '-printf', '%y %m %p %l\\n'], { cwd: at, timeoutMs: 60_000 })).stdout
      .split('\n')
      .filter((line) => line !== '' && !line.endsWith(' .'))
      .sort();
  expect(await listing(dir)).toEqual(await listing(expected));
}

async function isMounted(at: string): Promise<boolean> {
  const info = await readFile('/proc/self/mountinfo', 'utf8');
  return info.split('\n').some((line) => line.split(' ')[4] === at);
}

function api(url: string, apiKey: string) {
  return async <T>(method: string, path: string): Promise<T> => {
    const response = await fetch(`${url}${path}`, { method, headers: { authorization: `Bearer ${apiKey}` }, signal: AbortSignal.timeout(20_000) });
    const text = await response.text();
    if (!response.ok) throw new Error(`${method} ${path} → ${response.status}: ${text}`);
    return JSON.parse(text) as T;
  };
}

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'strata-mount-existing-'));
  dir = join(root, 'mnt');
  expected = join(root, 'expected');
  home = join(root, 'home');
  env = { ...baseEnv(join(root, 'config')), STRATA_LOG_LEVEL: 'warn' };
  await mkdir(join(dir, 'src', 'util'), { recursive: true });
  await mkdir(join(dir, 'data', 'empty'), { recursive: true });
  await run(
    dir,
    `
    printf '# Thesis\\n' > README.md
    printf 'print("main")\\n' > src/main.py
    printf 'def helper():\\n    return 1\\n' > src/util/helpers.py
    printf '#!/bin/sh\\necho ran\\n' > run.sh && chmod 755 run.sh
    printf 'secret\\n' > secret.key && chmod 600 secret.key
    ln -s src/main.py link
    printf '*.log\\n' > .strataignore
    printf 'first run\\n' > build.log
    printf 'composed\\n' > "$(printf 'caf\\303\\251.txt')"
    printf 'decomposed\\n' > "$(printf 'cafe\\314\\201.txt')"
    touch -d '2020-01-02 03:04:05' README.md src/main.py
    git init -q -b main && printf '.strata/\\n' >> .git/info/exclude && git add -A && git commit -qm one
    cp -a . ${JSON.stringify(expected)}
    mkfifo pipe
    `,
  );
}, 60_000);

afterAll(async () => {
  try {
    await m?.dispose();
    if (daemon !== null && daemon.exitCode === null && daemon.signalCode === null) {
      daemon.kill('SIGKILL');
      await waitExit(daemon, 10_000);
    }
  } finally {
    for (const at of [dir, join(root, 'watched'), join(root, 'plain')]) await forceUnmount(at);
    await rm(root, { recursive: true, force: true }).catch(() => undefined);
  }
}, 60_000);

describe('strata mount --import over a directory that holds a project', () => {
  it('without --import: refused before anything is bound, and the message names the flag', async () => {
    const result = await strata(['mount', dir, '--json']);
    expect(result.code).toBe(6);
    const error = JSON.parse(result.stdout).error as { code: string; message: string; details: { flag: string } };
    expect(error.code).toBe('INVALID_ARGUMENT');
    expect(error.message).toContain('strata mount --import');
    expect(error.details.flag).toBe('--import');
    const config = JSON.parse(await readFile(join(home, 'daemon.json'), 'utf8').catch(() => '{"projects":[]}')) as { projects: unknown[] };
    expect(config.projects).toEqual([]);
  }, 60_000);

  it('imports every file once and shows the same tree through the mount; git works inside', async () => {
    m = await mountProject({ root, args: ['--import'] });
    expect(await isMounted(dir)).toBe(true);
    await expectSameTree();
    // Each file shows the mtime it had in the directory (make and rsync compare them), not its import's.
    const files = IMPORTED.filter((path) => path !== 'link');
    const mtimes = async (at: string) => (await sh('stat', ['-c', '%Y %n', ...files], { cwd: at, timeoutMs: 20_000 })).stdout;
    expect(await mtimes(dir)).toBe(await mtimes(expected));
    for (const path of IMPORTED) {
      const history = await m.history(path);
      expect(history.map((v) => v.kind), path).toEqual(['write']);
    }
    expect((await m.stat('link'))?.symlink).toBe(true);
    expect((await m.stat('run.sh'))?.executable).toBe(true);
    expect((await m.read('link')).toString()).toBe('src/main.py');
    // Ignored: in the mount (its backing directory), not in history.
    expect(await m.history('build.log')).toEqual([]);
    expect((await run(dir, 'cat build.log')).stdout).toBe('first run\n');
    // A FIFO is no version either, but it is there, as one made through the mount would be.
    expect((await sh('test', ['-p', join(dir, 'pipe')], { allowFail: true })).code).toBe(0);
    expect(await m.history('pipe')).toEqual([]);
    expect(await m.history('.git/HEAD')).toEqual([]);
    const status = await run(dir, 'git status --porcelain && git log --oneline');
    expect(status.stdout.split('\n').filter((line) => line !== '' && line !== '?? .strata/')).toEqual([expect.stringMatching(/^[0-9a-f]+ one$/)]);
    const daemonStatus = await m.api<{ projects: Array<{ state: string; scan: { kind: string; captured: number; finished: boolean } }> }>('GET', '/v1/daemon/status');
    expect(daemonStatus.projects[0]).toMatchObject({ state: 'mounted', scan: { kind: 'initial', captured: IMPORTED.length, finished: true } });
  }, 120_000);

  it('refused with PROJECT_DIR_TAKEN: a directory another process mounts, and one that is another home\'s project', async () => {
    const otherHome = join(root, 'other-home');
    const mounted = await sh(execPath, [MAIN, 'mount', '--import', dir, '--home', otherHome, '--json'], { cwd: root, env, allowFail: true, timeoutMs: 60_000 });
    expect(mounted.code).toBe(4);
    expect(JSON.parse(mounted.stdout).error).toMatchObject({ code: 'PROJECT_DIR_TAKEN', message: expect.stringMatching(/already mounted by another process/) });
    const foreign = join(root, 'foreign');
    await mkdir(foreign);
    await writeFile(join(foreign, 'a.txt'), 'a\n');
    expect((await sh(execPath, [MAIN, 'init', foreign, '--home', otherHome, '--json'], { cwd: root, env, allowFail: true, timeoutMs: 60_000 })).code).toBe(0);
    const taken = await strata(['mount', '--import', foreign, '--json']);
    expect(taken.code).toBe(4);
    expect(JSON.parse(taken.stdout).error).toMatchObject({ code: 'PROJECT_DIR_TAKEN', message: expect.stringMatching(/of another Strata home/) });
  }, 60_000);

  it('changes made through the mount: edits, new files, deletions, renames, links, modes, directories, git commits', async () => {
    await both(`
      printf 'more\\n' >> README.md
      chmod 640 README.md
      ln README.md README.link.md && printf 'through the link\\n' >> README.link.md
      printf 'new\\n' > new.txt && chmod +x new.txt
      rm src/util/helpers.py
      mv src/main.py src/app.py
      ln -sfn src/app.py link
      mkdir -p newdir/deep
      rmdir data/empty
      mkdir data/other && printf 'x\\n' > data/other/x.txt && mv data/other data/renamed
      printf 'second run\\n' >> build.log
      git add -A && git commit -qm two
    `);
    await m!.idle();
    // The append, then the write through the hard link: a version of both names.
    expect((await m!.history('README.md')).length).toBe(3);
    expect((await m!.read('README.link.md')).toString()).toBe((await m!.read('README.md')).toString());
    expect(await m!.stat('src/util/helpers.py')).toBeNull();
    expect((await m!.stat('src/app.py'))?.size).toBe(14);
    expect((await m!.stat('new.txt'))?.executable).toBe(true);
    await expectSameTree();
  }, 120_000);

  it('strata unmount leaves the project’s current tree in the directory', async () => {
    const result = await strata(['unmount', dir, '--json']);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    const out = JSON.parse(result.stdout) as { wasMounted: boolean; inPlace: boolean; writeBack: { failed: number; movedBack: number; written: number; removed: number } };
    expect(out).toMatchObject({ wasMounted: true, inPlace: true, writeBack: { failed: 0 } });
    expect(out.writeBack.movedBack).toBeGreaterThanOrEqual(2); // .git and build.log
    expect(await isMounted(dir)).toBe(false);
    await expectSameTree();
    // Strata's own leftovers: only the marker CLI commands find the project by.
    expect((await sh('ls', ['-A', join(dir, '.strata')])).stdout.split('\n').filter(Boolean).sort()).toEqual(['.gitignore', 'incoming', 'project.json']);
    expect((await sh('test', ['-p', join(dir, 'pipe')], { allowFail: true })).code).toBe(0);
    const git = await run(dir, 'git status --porcelain && git log --oneline');
    // Nothing untracked: `.strata/.gitignore` keeps git out of `.strata/`.
    expect(git.stdout.split('\n').filter((line) => line !== '')).toEqual([expect.stringMatching(/ two$/), expect.stringMatching(/ one$/)]);
    const config = JSON.parse(await readFile(join(home, 'daemon.json'), 'utf8')) as { projects: Array<{ inPlace?: boolean; unmounted?: boolean }> };
    expect(config.projects[0]).toMatchObject({ inPlace: true, unmounted: true });
    // Still the home's project: `strata status` lists it as unmounted (it said "no projects").
    const status = await strata(['status', '--json']);
    expect((JSON.parse(status.stdout) as { projects: unknown[] }).projects).toEqual([expect.objectContaining({ dir, state: 'unmounted' })]);
  }, 120_000);

  it('mounting again (no flag: the mode is remembered) imports nothing twice; an edit made meanwhile is one version', async () => {
    const history = async () => (await m!.api<{ items: VersionRecord[] }>('GET', `/v1/projects/${m!.projectId}/history?limit=1000`)).items;
    const before = (await history()).length;
    await both(`printf 'edited while unmounted\\n' >> src/app.py`);
    const result = await strata(['mount', dir, '--json']);
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({ dir, mode: 'mount', inPlace: true, daemonRunning: true });
    expect(await isMounted(dir)).toBe(true);
    const after = await history();
    expect(after.length).toBe(before + 1);
    expect(after[0]).toMatchObject({ path: 'src/app.py', kind: 'write' });
    await expectSameTree();
  }, 120_000);

  it('a kill -9 while mounted loses nothing: the restarted daemon mounts over the directory again, and stopping it writes everything back', async () => {
    await both(`printf 'before the kill\\n' > kill.txt`);
    await m!.idle();
    // Fsynced and killed before its capture: the mount's journal has it.
    await both(`python3 -c "import os; f = os.open('last.txt', os.O_WRONLY | os.O_CREAT, 0o644); os.write(f, b'fsynced\\\\n'); os.fsync(f); os.close(f)"`);
    m!.child.kill('SIGKILL');
    await waitExit(m!.child, 10_000);
    // No daemon: `strata unmount` cannot write back what only the project has, and says so.
    const pending = await strata(['unmount', dir, '--json']);
    expect(pending.code).toBe(4);
    expect(JSON.parse(pending.stdout).error.code).toBe('WRITE_BACK_PENDING');

    const started = await startListening(['daemon', '--home', home, '--listen', '127.0.0.1:0'], env, 60_000);
    daemon = started.child;
    const call = api(started.url, m!.apiKey);
    const status = await call<{ projects: Array<{ state: string; warnings: string[] }> }>('GET', '/v1/daemon/status');
    expect(status.projects[0]!.state).toBe('mounted');
    expect(status.projects[0]!.warnings.join('\n')).toMatch(/removed a stale mount/);
    await waitFor('last.txt to be versioned', async () => {
      const items = (await call<{ items: VersionRecord[] }>('GET', `/v1/projects/${m!.projectId}/history?path=last.txt`)).items;
      return items.length > 0 ? items : undefined;
    });
    const paths = (await call<{ items: VersionRecord[] }>('GET', `/v1/projects/${m!.projectId}/history?limit=1000`)).items.map((v) => v.path);
    // One version each for the two new files; nothing of the directory imported again.
    expect(paths.filter((p) => p === 'kill.txt' || p === 'last.txt').sort()).toEqual(['kill.txt', 'last.txt']);
    expect(paths.filter((p) => p === 'README.md').length).toBe(3);
    await expectSameTree();

    daemon.kill('SIGTERM');
    expect(await waitExit(daemon, 60_000)).toBe(0);
    expect(await isMounted(dir)).toBe(false);
    await expectSameTree();
    expect(await readFile(join(dir, 'last.txt'), 'utf8')).toBe('fsynced\n');
  }, 180_000);

  it('strata unmount of a directory that is no project: PROJECT_NOT_FOUND', async () => {
    const elsewhere = join(root, 'elsewhere');
    await writeFile(join(root, 'elsewhere.txt'), '');
    await mkdir(elsewhere, { recursive: true });
    const result = await strata(['unmount', elsewhere, '--json']);
    expect(result.code).toBe(3);
    expect(JSON.parse(result.stdout).error.code).toBe('PROJECT_NOT_FOUND');
  }, 60_000);
});

describe('--import on a directory bound already', () => {
  let call: ReturnType<typeof api>;
  const projectOf = async (at: string) => {
    const config = JSON.parse(await readFile(join(home, 'daemon.json'), 'utf8')) as { projects: Array<{ projectId: string; dir: string }> };
    return config.projects.find((p) => p.dir === at)!.projectId;
  };
  const versions = async (at: string, path: string) =>
    (await call<{ items: VersionRecord[] }>('GET', `/v1/projects/${await projectOf(at)}/history?path=${encodeURIComponent(path)}`)).items;
  const idle = async () => {
    await new Promise((resolve) => setTimeout(resolve, 300));
    await waitFor('captures', async () => ((await call<{ projects: Array<{ pending: number }> }>('GET', '/v1/daemon/status')).projects.every((p) => p.pending === 0) ? true : undefined), 20_000);
  };

  beforeAll(async () => {
    const started = await startListening(['daemon', '--home', home, '--listen', '127.0.0.1:0'], env, 60_000);
    daemon = started.child;
    call = api(started.url, (await readFile(join(home, 'secrets', 'local-owner.key'), 'utf8')).trim());
  }, 60_000);

  afterAll(async () => {
    daemon?.kill('SIGTERM');
    if (daemon !== null) await waitExit(daemon, 60_000);
  }, 70_000);

  it('a watched directory becomes an in-place mount without importing its files again', async () => {
    const watched = join(root, 'watched');
    await mkdir(join(watched, 'sub'), { recursive: true });
    await writeFile(join(watched, 'a.txt'), 'a\n');
    await writeFile(join(watched, 'sub', 'b.txt'), 'b\n');
    expect((await strata(['watch', watched, '--json'])).code).toBe(0);
    await waitFor('the watch to version both files', async () => ((await versions(watched, 'a.txt')).length === 1 && (await versions(watched, 'sub/b.txt')).length === 1 ? true : undefined), 20_000);
    const result = await strata(['mount', '--import', watched, '--json']);
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({ dir: watched, mode: 'mount', inPlace: true, created: false });
    expect(await isMounted(watched)).toBe(true);
    expect((await versions(watched, 'a.txt')).length).toBe(1);
    await run(watched, `printf 'c\\n' > c.txt && rm a.txt`);
    await idle();
    expect((await strata(['unmount', watched, '--json'])).code).toBe(0);
    expect(await isMounted(watched)).toBe(false);
    expect((await sh('ls', ['-A', watched])).stdout.split('\n').filter(Boolean).sort()).toEqual(['.strata', 'c.txt', 'sub']);
    expect(await readFile(join(watched, 'sub', 'b.txt'), 'utf8')).toBe('b\n');
  }, 120_000);

  it('a mount project whose files lived only in Strata becomes in-place: unmounting writes them into the directory', async () => {
    const plain = join(root, 'plain');
    expect((await strata(['mount', plain, '--json'])).code).toBe(0);
    await run(plain, `printf 'p\\n' > p.txt && mkdir d && printf 'q\\n' > d/q.txt && mkdir .git && printf 'x\\n' > .git/x`);
    await idle();
    const result = await strata(['mount', '--import', plain, '--json']);
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({ mode: 'mount', inPlace: true });
    expect(await isMounted(plain)).toBe(true);
    // The ignored file moved from the home's backing directory to the one in the directory.
    expect(await readFile(join(plain, '.git', 'x'), 'utf8')).toBe('x\n');
    expect((await versions(plain, 'p.txt')).length).toBe(1);
    expect((await strata(['unmount', plain, '--json'])).code).toBe(0);
    expect(await isMounted(plain)).toBe(false);
    expect(await readFile(join(plain, 'p.txt'), 'utf8')).toBe('p\n');
    expect(await readFile(join(plain, 'd', 'q.txt'), 'utf8')).toBe('q\n');
    expect(await readFile(join(plain, '.git', 'x'), 'utf8')).toBe('x\n');
  }, 120_000);
});
