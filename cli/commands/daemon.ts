// `strata daemon`: runs every project of daemon.json in the foreground (systemd runs exactly this),
// plus the helpers init/watch/status share: which home, and is its daemon running.

import type { Command } from 'commander';
import { type ApiClient, createClient } from '../client.js';
import { contextFor } from '../context.js';
import { daemonTarget, discoverProject } from '../discover.js';
import { ERROR_CATALOGUE } from '../../engine/errors.js';
import { CliError, EXIT, exitCodeForStatus } from '../errors.js';
import { checkListen, runUntilSignal } from '../foreground.js';
import { daemonLogger, logFormatOption, resolveLogFormat } from '../log-format.js';
import { CLI_VERSION } from '../version.js';

/** A stop that hangs (a mount that will not let go) must not keep a stopped service alive. */
const STOP_TIMEOUT_MS = 30_000;
const PROBE_TIMEOUT_MS = 1_500;

/** --home, else the home of the project around the working directory, else the default home. */
export async function localHome(flag: string | undefined): Promise<string> {
  const { resolveHome } = await import('../../server/home.js');
  if (flag !== undefined) return resolveHome(flag);
  return discoverProject()?.home ?? resolveHome();
}

/**
 * The home a new project goes into (`strata clone DIR`): --home, else $STRATA_HOME, else the default.
 * Not the home of the project the command happens to run in: the new project lives at DIR, and a
 * clone run from inside a linked project had put a second copy into that project's home.
 */
export async function homeForNewProject(flag: string | undefined): Promise<string> {
  const { resolveHome } = await import('../../server/home.js');
  return flag === undefined ? resolveHome() : resolveHome(flag);
}

/**
 * A client for the home's running daemon, or null when none answers. Whatever answers at the address
 * in daemon.json is this home's daemon only while that daemon holds the home's lock: another home's
 * daemon (every home starts with the same default address) must not be taken for it.
 */
export async function runningDaemon(home: string): Promise<ApiClient | null> {
  const target = daemonTarget(home);
  if (target === null || !target.running) return null;
  try {
    const response = await fetch(`${target.serverUrl}/healthz`, { signal: AbortSignal.timeout(PROBE_TIMEOUT_MS) });
    if (!response.ok) return null;
  } catch {
    return null;
  }
  return createClient({ serverUrl: target.serverUrl, apiKey: target.apiKey, version: CLI_VERSION });
}


/**
 * Runs the home's daemon — every project of daemon.json — until SIGTERM/SIGINT, then stops it cleanly
 * (captures flushed, mounts unmounted) and exits 0. `required` are the projects the command was about
 * (`strata watch DIR`): if one of them cannot start, the command fails instead of serving the rest.
 */
export async function runForeground(options: { home: string; listen?: string; required?: string[]; json: boolean; logFormat?: string }): Promise<void> {
  const { startDaemon } = await import('../../daemon/daemon.js');
  const logger = await daemonLogger(resolveLogFormat(options.logFormat));
  // Everything is resolved by now. A daemon holding the directory it was started from fails when that
  // directory goes (removed, or a mount unmounted under the shell): Node then cannot start a worker
  // thread (uv_cwd: ENOENT / ENOTCONN), so no content could be stored. It also kept a mount busy.
  process.chdir('/');
  const daemon = await runUntilSignal({
    start: () =>
      startDaemon({
        home: options.home,
        logger,
        ...(options.listen === undefined ? {} : { listen: options.listen }),
      }),
    stop: (running) => running.stop(),
    timeoutMs: STOP_TIMEOUT_MS,
    stopping: 'stopping (flushing captures)',
  });
  if (daemon === undefined) return;
  // `strata watch DIR` / `strata mount DIR` are about that project: if it cannot start, a daemon
  // serving the others would only look like success. Say why and exit.
  const required = options.required ?? [];
  const failed = daemon.status().projects.filter((p) => required.includes(p.projectId) && p.state === 'error');
  if (failed.length > 0) {
    await daemon.stop();
    const { dir, error } = failed[0]!;
    const code = error?.code ?? 'INTERNAL';
    const status = (ERROR_CATALOGUE as Record<string, { status: number }>)[code]?.status;
    throw new CliError(code, `${dir} could not start: ${error?.message ?? 'unknown error'}`, { exitCode: status === undefined ? EXIT.unexpected : exitCodeForStatus(status) });
  }
  // Tests and scripts read this line to learn the URL (port 0 picks a free one).
  process.stderr.write(`strata: daemon for ${options.home}\nlistening on ${daemon.url}\n`);
  if (options.json) process.stdout.write(`${JSON.stringify({ url: daemon.url, home: options.home, pid: process.pid })}\n`);
  // Runs until a signal: the HTTP server keeps the event loop alive.
}

export function registerDaemonCommand(program: Command): void {
  program
    .command('daemon')
    .description('run every configured project (watch and mount) and serve the API on loopback (default 127.0.0.1:7421)')
    .option('--home <dir>', 'Strata home (default: $STRATA_HOME, else $XDG_DATA_HOME/strata)')
    .option('--listen <host:port>', 'loopback address (default: daemon.json "listen", else 127.0.0.1:7421)')
    .addOption(logFormatOption())
    .action(async (options: { home?: string; listen?: string; logFormat?: string }, command: Command) => {
      const ctx = contextFor(command);
      checkListen(options.listen);
      const { resolveHome } = await import('../../server/home.js');
      const home = resolveHome(options.home);
      if (await runningDaemon(home)) {
        throw new CliError('DAEMON_RUNNING', `a daemon already runs for ${home}; see \`strata status\``, { exitCode: EXIT.conflict });
      }
      await runForeground({ home, ...(options.listen === undefined ? {} : { listen: options.listen }), json: ctx.output.json, ...(options.logFormat === undefined ? {} : { logFormat: options.logFormat }) });
    });
}
