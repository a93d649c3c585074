// `strata help COMMAND` documents each command (README), nested ones too: `strata help snapshot
// restore` and `strata help git clone` printed the parent group's help (commander's help command read
// only the first name), and exited 2.
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { baseEnv, runCli, tempDir } from './cli-harness.js';

let dir: { path: string; remove(): Promise<void> };
let env: NodeJS.ProcessEnv;

beforeAll(async () => {
  dir = await tempDir('strata-cli-help-');
  env = baseEnv(join(dir.path, 'config'));
});
afterAll(async () => {
  await dir?.remove();
});

describe('strata help', () => {
  it('prints the help of a nested command, the same as COMMAND --help, and exits 0', async () => {
    for (const [path, needle] of [
      [['snapshot', 'restore'], 'Usage: strata snapshot restore [options] <snapshot>'],
      [['git', 'clone'], 'Usage: strata git clone [options] [project] <dir>'],
      [['snapshot', 'create'], '--message'],
      [['sync', 'confirm'], 'Usage: strata sync confirm'],
    ] as const) {
      const help = await runCli(['help', ...path], env);
      expect(help.code, help.stderr).toBe(0);
      expect(help.stdout).toContain(needle);
      expect(help.stdout).not.toContain('Commands:');
      const flag = await runCli([...path, '--help'], env);
      expect(help.stdout).toBe(flag.stdout);
    }
  });

  it('still prints a group and the whole program, and refuses an unknown name', async () => {
    const group = await runCli(['help', 'snapshot'], env);
    expect(group.code).toBe(0);
    expect(group.stdout).toContain('Usage: strata snapshot');
    expect(group.stdout).toMatch(/^ {2}restore /m);
    const all = await runCli(['help'], env);
    expect(all.code).toBe(0);
    expect(all.stdout).toContain('Usage: strata [options] <command> [arguments]');
    // the groups keep their own help command
    expect((await runCli(['git', 'help', 'clone'], env)).stdout).toContain('Usage: strata git clone');
    for (const bad of [['frobnicate'], ['snapshot', 'frobnicate']]) {
      const result = await runCli(['help', ...bad, '--json'], env);
      expect(result.code).toBe(2);
      const error = JSON.parse(result.stdout).error as { code: string; message: string };
      expect(error.code).toBe('USAGE');
      expect(error.message).toContain(`unknown command '${bad.join(' ')}'`);
    }
  });
});
