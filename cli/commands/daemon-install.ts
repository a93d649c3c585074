// `strata daemon install` / `strata daemon uninstall`: the daemon as a systemd user service. install
// writes the unit (cli/systemd-unit.ts) and, when a user systemd answers, enables and starts it;
// where none answers (a container, an SSH session without a user manager) it says exactly what to
// run once one does. uninstall stops and disables the service, then removes the unit.

import { execFile } from 'node:child_process';
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import type { Command } from 'commander';
import { contextFor } from '../context.js';
import { CliError, EXIT } from '../errors.js';
import { renderDaemonUnit, UNIT_NAME, userUnitDir } from '../systemd-unit.js';
import { runningDaemon } from './daemon.js';

const run = promisify(execFile);
const SYSTEMCTL_TIMEOUT_MS = 30_000;

/** Whether a user service manager answers (`systemctl --user` fails with "Failed to connect to bus" otherwise). */
async function userSystemd(): Promise<boolean> {
  try {
    await run('systemctl', ['--user', 'show', '--property=Version', '--value'], { timeout: SYSTEMCTL_TIMEOUT_MS });
    return true;
  } catch {
    return false;
  }
}

async function systemctl(args: string[]): Promise<void> {
  try {
    await run('systemctl', ['--user', ...args], { timeout: SYSTEMCTL_TIMEOUT_MS });
  } catch (error) {
    const stderr = String((error as { stderr?: unknown }).stderr ?? '').trim();
    throw new CliError('SYSTEMCTL_FAILED', `systemctl --user ${args.join(' ')} failed${stderr === '' ? '' : `: ${stderr.split('\n')[0]}`}`, {
      exitCode: EXIT.unexpected,
      details: { args },
      cause: error,
    });
  }
}

export function registerDaemonInstallCommands(program: Command): void {
  const daemon = program.commands.find((command) => command.name() === 'daemon');
  if (daemon === undefined) throw new TypeError('register the daemon command first');

  daemon
    .command('install')
    .description(`write the systemd user unit (${UNIT_NAME}) for this home and enable it (systemctl --user enable --now)`)
    .option('--home <dir>', 'Strata home the service runs (default: $STRATA_HOME, else $XDG_DATA_HOME/strata)')
    .action(async (_options: unknown, command: Command) => {
      const ctx = contextFor(command);
      const { resolveHome } = await import('../../server/home.js');
      // `strata daemon` has --home too, and commander gives it to whichever command it meets first
      const home = resolveHome(command.optsWithGlobals<{ home?: string }>().home);
      const unit = await renderDaemonUnit({ node: process.execPath, cliMain: resolve(import.meta.dirname, '..', 'main.js'), home });
      const dir = userUnitDir();
      const path = join(dir, UNIT_NAME);
      await mkdir(dir, { recursive: true });
      // temp + rename: systemd (or a reader) never sees half a unit
      const temp = `${path}.tmp-${process.pid}`;
      await writeFile(temp, unit, { mode: 0o644 });
      await rename(temp, path);
      const commands = ['systemctl --user daemon-reload', `systemctl --user enable --now ${UNIT_NAME}`];
      const reachable = await userSystemd();
      if (reachable) {
        if (await runningDaemon(home)) ctx.output.warn(`a daemon already runs for ${home}: stop it, or the service will find the home taken`);
        await systemctl(['daemon-reload']);
        await systemctl(['enable', '--now', UNIT_NAME]);
      }
      ctx.output.result({ unit: path, home, enabled: reachable, ...(reachable ? {} : { commands }) }, () => {
        ctx.output.line(`wrote ${path} (home ${home})`);
        if (reachable) ctx.output.line(`enabled and started ${UNIT_NAME}: journalctl --user -u strata-daemon -f`);
        else {
          ctx.output.line('no user systemd answers here (systemctl --user cannot connect); once one does, run:');
          for (const line of commands) ctx.output.line(`  ${line}`);
        }
      });
    });

  daemon
    .command('uninstall')
    .description(`stop and disable the daemon's systemd user service and remove its unit (${UNIT_NAME})`)
    .action(async (_options: unknown, command: Command) => {
      const ctx = contextFor(command);
      const path = join(userUnitDir(), UNIT_NAME);
      const installed = await readFile(path).then(
        () => true,
        (error: NodeJS.ErrnoException) => (error.code === 'ENOENT' ? false : Promise.reject(error)),
      );
      const reachable = await userSystemd();
      if (installed && reachable) await systemctl(['disable', '--now', UNIT_NAME]);
      if (installed) await rm(path);
      if (installed && reachable) await systemctl(['daemon-reload']);
      ctx.output.result({ unit: path, removed: installed, stopped: installed && reachable }, () => {
        if (!installed) ctx.output.line(`${path} is not there: nothing to uninstall`);
        else if (reachable) ctx.output.line(`stopped, disabled and removed ${path}`);
        else ctx.output.line(`removed ${path} (no user systemd answers here, so nothing was running under it)`);
      });
    });
}
