// `cd ~/thesis && strata mount --import .`: the shell's working directory stays the directory under the
// mount, so that shell sees neither the mount nor `.git/` (moved aside), and what it writes is
// versioned only at the unmount. The CLI says so, and how to enter the mount; run from elsewhere it
// says nothing. A real daemon, a real FUSE mount.

import { execPath } from 'node:process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { baseEnv, MAIN, startListening } from './cli-harness.js';
import { forceUnmount, sh } from './mount-harness.js';

let root: string;
let daemon: Awaited<ReturnType<typeof startListening>> | null = null;

afterAll(async () => {
  if (daemon !== null && daemon.child.exitCode === null) daemon.child.kill('SIGKILL');
  await forceUnmount(join(root, 'thesis'));
  await rm(root, { recursive: true, force: true }).catch(() => undefined);
}, 60_000);

describe('strata mount --import from inside the directory', () => {
  it('warns that the shell there does not see the mount, and says how to enter it', async () => {
    root = await mkdtemp(join(tmpdir(), 'strata-import-cwd-'));
    const dir = join(root, 'thesis');
    await mkdir(dir);
    await writeFile(join(dir, 'a.m'), 'a\n');
    const env = { ...baseEnv(join(root, 'config')), STRATA_HOME: join(root, 'home'), STRATA_LOG_LEVEL: 'warn' };
    daemon = await startListening(['daemon', '--listen', '127.0.0.1:0'], env);
    const strata = (args: string[], cwd: string) => sh(execPath, [MAIN, ...args, '--json'], { cwd, env, allowFail: true, timeoutMs: 60_000 });

    const inside = await strata(['mount', '--import', '.'], dir);
    expect(inside.code).toBe(0);
    expect(inside.stderr).toContain(`the working directory is inside ${dir}`);
    expect(inside.stderr).toContain('cd "$PWD"');
    expect((await strata(['unmount', dir], root)).code).toBe(0);

    const outside = await strata(['mount', dir], root);
    expect(outside.code).toBe(0);
    expect(outside.stderr).not.toContain('working directory');
    expect((await strata(['unmount', dir], root)).code).toBe(0);
  }, 120_000);
});
