// `strata daemon install/uninstall`: the unit written to $XDG_CONFIG_HOME/systemd/user with this
// installation's paths, valid for `systemd-analyze verify`, enabled when a user systemd answers and
// otherwise the exact commands to run; uninstall stops, disables and removes it.
//
// This machine has no user service manager (`systemctl --user` cannot connect), which is the first
// case. The second runs the CLI with a `systemctl` of our own first on PATH that answers and records
// its arguments: the only way to see which calls `install` makes without a user session here.

import { execFile } from 'node:child_process';
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { baseEnv, MAIN, parseJson, runCli, tempDir } from './cli-harness.js';

const run = promisify(execFile);

let dir: { path: string; remove(): Promise<void> };
let env: NodeJS.ProcessEnv;
let unitPath = '';
// a home with a space and a `%` (a systemd specifier): the unit must quote and escape it
let home = '';

beforeAll(async () => {
  dir = await tempDir('strata-daemon-install-');
  env = baseEnv(join(dir.path, 'config'));
  home = join(dir.path, 'my home 100%');
  unitPath = join(dir.path, 'config', 'systemd', 'user', 'strata-daemon.service');
});

afterAll(async () => {
  await dir?.remove();
});

describe('strata daemon install', () => {
  it('writes a unit that verifies, with the node binary, the CLI entry and the home; says what to run without a user systemd', async () => {
    const installed = await runCli(['daemon', 'install', '--home', home, '--json'], env);
    expect(installed.code, installed.stderr).toBe(0);
    expect(parseJson(installed)).toStrictEqual({
      unit: unitPath,
      home,
      enabled: false,
      commands: ['systemctl --user daemon-reload', 'systemctl --user enable --now strata-daemon.service'],
    });
    const unit = await readFile(unitPath, 'utf8');
    expect(unit).toContain(`\nExecStart=${process.execPath} --max-semi-space-size=4 --heap-growing-percent=50 ${MAIN} daemon\n`);
    expect(unit).toContain(`\nEnvironment="STRATA_HOME=${home.replace('%', '%%')}"\n`);
    expect(unit).toContain('\nWantedBy=default.target');
    expect(unit).not.toContain('ADJUST');
    const verified = await run('systemd-analyze', ['verify', unitPath]).catch((error: { stderr?: string }) => error);
    expect(String(verified.stderr ?? '').trim()).toBe('');

    const human = await runCli(['daemon', 'install', '--home', home], env);
    expect(human.code).toBe(0);
    expect(human.stdout).toContain(`wrote ${unitPath}`);
    expect(human.stdout).toContain('  systemctl --user enable --now strata-daemon.service');

    const removed = await runCli(['daemon', 'uninstall', '--json'], env);
    expect(parseJson(removed)).toStrictEqual({ unit: unitPath, removed: true, stopped: false });
    await expect(readFile(unitPath)).rejects.toMatchObject({ code: 'ENOENT' });
    const again = await runCli(['daemon', 'uninstall'], env);
    expect(again.code).toBe(0);
    expect(again.stdout).toContain('nothing to uninstall');
  });

  it('enables and starts it where a user systemd answers; uninstall disables, stops and removes it', async () => {
    const bin = join(dir.path, 'bin');
    const log = join(dir.path, 'systemctl.log');
    await mkdir(bin, { recursive: true });
    await writeFile(join(bin, 'systemctl'), `#!/bin/sh\necho "$*" >> '${log}'\nexit 0\n`);
    await chmod(join(bin, 'systemctl'), 0o755);
    const withSystemd = { ...env, PATH: `${bin}:${env['PATH'] ?? ''}` };
    const installed = await runCli(['daemon', 'install', '--home', home, '--json'], withSystemd);
    expect(installed.code, installed.stderr).toBe(0);
    expect(parseJson(installed)).toStrictEqual({ unit: unitPath, home, enabled: true });
    expect((await readFile(log, 'utf8')).trim().split('\n')).toStrictEqual([
      '--user show --property=Version --value',
      '--user daemon-reload',
      '--user enable --now strata-daemon.service',
    ]);
    await writeFile(log, '');
    const removed = await runCli(['daemon', 'uninstall', '--json'], withSystemd);
    expect(parseJson(removed)).toStrictEqual({ unit: unitPath, removed: true, stopped: true });
    expect((await readFile(log, 'utf8')).trim().split('\n')).toStrictEqual([
      '--user show --property=Version --value',
      '--user disable --now strata-daemon.service',
      '--user daemon-reload',
    ]);
    await expect(readFile(unitPath)).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('reports a failing systemctl with SYSTEMCTL_FAILED', async () => {
    const bin = join(dir.path, 'bin-failing');
    await mkdir(bin, { recursive: true });
    await writeFile(join(bin, 'systemctl'), `#!/bin/sh\ncase "$*" in *enable*) echo "Unit strata-daemon.service has a bad setting" >&2; exit 1;; esac\nexit 0\n`);
    await chmod(join(bin, 'systemctl'), 0o755);
    const failed = await runCli(['daemon', 'install', '--home', home, '--json'], { ...env, PATH: `${bin}:${env['PATH'] ?? ''}` });
    expect(failed.code).toBe(1);
    const error = parseJson<{ error: { code: string; message: string } }>(failed).error;
    expect(error.code).toBe('SYSTEMCTL_FAILED');
    expect(error.message).toContain('enable --now strata-daemon.service failed: Unit strata-daemon.service has a bad setting');
  });
});
