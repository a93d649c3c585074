// A home whose local owner key was made under one pepper (STRATA_PEPPER exported in the shell that ran
// `strata init`, e.g. next to a `strata serve`) and whose daemon later starts without it: the daemon
// made a new secrets/pepper and ran on, capturing and syncing, while every command sent to it was
// refused as UNAUTHENTICATED with "sign in with `strata login`". Now the mismatch is said where it
// happens, at the start, naming the pepper; with the home's pepper everything works as before.

import { randomBytes } from 'node:crypto';
import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { baseEnv, runCli, startListening, tempDir } from './cli-harness.js';

let dir: { path: string; remove(): Promise<void> };
let env: NodeJS.ProcessEnv;
const pepper = randomBytes(32).toString('hex');

beforeAll(async () => {
  dir = await tempDir('strata-pepper-');
  env = { ...baseEnv(join(dir.path, 'config')), STRATA_HOME: join(dir.path, 'home') };
});

afterAll(async () => {
  await dir?.remove();
});

describe('a daemon started without the pepper its home was made with', () => {
  it('refuses to start, naming the pepper, instead of answering every command UNAUTHENTICATED', async () => {
    const project = join(dir.path, 'thesis');
    await mkdir(project);
    const init = await runCli(['init', project], { ...env, STRATA_PEPPER: pepper });
    expect(init.code, init.stderr).toBe(0);

    const started = await runCli(['daemon'], env, { timeoutMs: 15_000 });
    expect(started.signal, 'the daemon ran on under another pepper').toBeNull();
    expect(started.code).toBe(6);
    expect(started.stderr).not.toContain('strata login');
    expect(started.stderr).toMatch(/pepper/);
    expect(started.stderr).toContain('local-owner.key');
    // `strata init` of another directory meets the same key and says the same.
    const other = join(dir.path, 'other');
    await mkdir(other);
    const again = await runCli(['init', other], env);
    expect(again.code).toBe(6);
    expect(again.stderr).toMatch(/pepper/);
    await rm(join(env['STRATA_HOME']!, 'secrets', 'pepper'), { force: true });

    // With the home's pepper, the daemon starts and its owner key works.
    const daemon = await startListening(['daemon'], { ...env, STRATA_PEPPER: pepper });
    try {
      const status = await runCli(['status', '--json'], env, { cwd: project });
      expect(status.code, status.stderr).toBe(0);
      expect(JSON.parse(status.stdout)).toMatchObject({ running: true });
    } finally {
      daemon.child.kill('SIGTERM');
      await new Promise((resolve) => daemon.child.once('exit', resolve));
    }
  }, 60_000);
});
