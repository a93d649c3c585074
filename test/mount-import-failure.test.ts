// `strata mount DIR --import` when a file cannot be imported (here: the home's object store refuses
// new objects, `chattr +i`, which binds root too). The mount would hide that file, so there is no
// mount: the command fails naming the file and the cause, and DIR holds its files as before (what
// moved into the backing directory came back). Before, it mounted with the file missing from view.

import { execPath } from 'node:process';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { baseEnv, MAIN } from './cli-harness.js';
import { forceUnmount, sh } from './mount-harness.js';

describe('strata mount --import with a file it cannot import', () => {
  let root: string;
  let locked: string[] = [];
  afterAll(async () => {
    if (locked.length > 0) await sh('chattr', ['-i', ...locked], { allowFail: true });
    await forceUnmount(join(root, 'mnt'));
    await rm(root, { recursive: true, force: true });
  });

  it('mounts nothing, says which file and why, and leaves the directory as it was', async () => {
    root = await mkdtemp(join(tmpdir(), 'strata-import-failure-'));
    const home = join(root, 'home');
    const dir = join(root, 'mnt');
    const env = { ...baseEnv(join(root, 'config')), STRATA_LOG_LEVEL: 'warn' };
    const strata = (args: string[]) => sh(execPath, [MAIN, ...args, '--home', home], { cwd: root, env, allowFail: true, timeoutMs: 60_000 });
    // A home whose store exists, then refuses new loose objects (large files go there).
    expect((await strata(['init', join(root, 'other')])).code).toBe(0);
    const store = join(home, 'store');
    locked = [...(await readdir(join(store, 'objects'))).filter((name) => /^[0-9a-f]{2}$/.test(name)).map((name) => join(store, 'objects', name)), join(store, 'tmp')];
    expect(locked.length).toBeGreaterThan(2);
    expect((await sh('chattr', ['+i', ...locked], { allowFail: true })).code).toBe(0);

    await mkdir(join(dir, 'src'), { recursive: true });
    const big = randomBytes(5_000_000);
    await writeFile(join(dir, 'src', 'big.bin'), big);
    await writeFile(join(dir, 'notes.txt'), 'small\n');
    const result = await strata(['mount', dir, '--import', '--listen', '127.0.0.1:0', '--json']);
    expect(result.code, result.stderr).not.toBe(0);
    const error = JSON.parse(result.stdout).error as { code: string; message: string };
    expect(error.code).toBe('STORAGE_ERROR');
    expect(error.message).toMatch(/1 file\(s\) could not be imported, e\.g\. "src\/big\.bin": .*nothing was mounted/);
    expect((await readFile('/proc/self/mountinfo', 'utf8')).split('\n').some((line) => line.split(' ')[4] === dir)).toBe(false);
    expect((await readFile(join(dir, 'src', 'big.bin'))).equals(big)).toBe(true);
    expect(await readFile(join(dir, 'notes.txt'), 'utf8')).toBe('small\n');
    expect((await readdir(dir)).sort()).toEqual(['.strata', 'notes.txt', 'src']);
    expect(await readdir(join(dir, '.strata'))).not.toContain('unversioned');
  }, 120_000);
});
