// `strata watch DIR`: version what lands in DIR. Adds DIR to the running daemon if there is one;
// otherwise runs the home's daemon in the foreground until Ctrl-C / SIGTERM — for every project of the
// home, not only DIR: a foreground daemon that left the other projects unversioned looked like one
// that versions them (issue 13).
//
// `--poll [INTERVAL]` scans DIR every INTERVAL instead of waiting for inotify events, kept for the
// project (daemon.json) and shown in `strata status`; `--no-poll` goes back to events. For directories
// other machines write to on a filesystem Strata does not recognise as a network one: their writes
// make no inotify events here and waited for the 10-minute reconciliation (issue 38 item 13).

import type { Command } from 'commander';
import { DEFAULT_POLL_MS, MAX_POLL_MS, MIN_POLL_MS } from '../../daemon/config.js';
import type { ProjectStatus } from '../../daemon/project-runner.js';
import { contextFor } from '../context.js';
import { CliError, EXIT } from '../errors.js';
import { checkListen } from '../foreground.js';
import { refuseIfElsewhere } from '../home-elsewhere.js';
import { logFormatOption } from '../log-format.js';
import { sanitizeLine } from '../output.js';
import { localHome, runForeground, runningDaemon } from './daemon.js';
import { initProject } from './init.js';

/** `5`, `5s`, `500ms`, `2m` as milliseconds (a bare number is seconds); USAGE (exit 2) otherwise. */
export function parsePollInterval(raw: string): number {
  const match = /^(\d+(?:\.\d+)?)(ms|s|m)?$/.exec(raw.trim());
  const ms = match === null ? Number.NaN : Number(match[1]) * (match[2] === 'ms' ? 1 : match[2] === 'm' ? 60_000 : 1_000);
  if (!Number.isFinite(ms) || ms < MIN_POLL_MS || ms > MAX_POLL_MS) {
    throw new CliError('USAGE', `--poll takes an interval between 1s and 60m (e.g. 5, 5s, 1500ms, 2m), got '${raw}'`, { exitCode: EXIT.usage, details: { field: 'poll' } });
  }
  return Math.round(ms);
}

/** Sets the project's polling in daemon.json: through the running daemon (which restarts the project), else in the file. */
async function setPolling(home: string, projectId: string, pollMs: number | null): Promise<void> {
  const client = await runningDaemon(home);
  if (client !== null) {
    await client.json<ProjectStatus>('PUT', `/v1/daemon/projects/${encodeURIComponent(projectId)}/watch`, { json: { pollMs } });
    return;
  }
  refuseIfElsewhere(home, '`strata watch --poll`');
  const { readDaemonConfig, withPolling, writeDaemonConfig } = await import('../../daemon/config.js');
  const config = readDaemonConfig(home);
  await writeDaemonConfig(home, { ...config, projects: config.projects.map((p) => (p.projectId === projectId ? withPolling(p, pollMs) : p)) });
}

export function registerWatchCommand(program: Command): void {
  program
    .command('watch')
    .description('version every write in a directory (init if needed); runs in the foreground unless a daemon runs')
    .argument('<dir>', 'directory to watch (created if missing)')
    .option('--name <name>', 'project name for a new project (default: the directory name)')
    .option('--home <dir>', 'Strata home (default: $STRATA_HOME, else $XDG_DATA_HOME/strata)')
    .option('--listen <host:port>', 'loopback address of a daemon started here')
    .option(
      '--poll [interval]',
      `scan the directory every INTERVAL (default ${DEFAULT_POLL_MS / 1000}s) instead of waiting for file events: for a directory other machines write to (a network filesystem); kept for the project, shown in \`strata status\``,
    )
    .option('--no-poll', 'back to file events (polling stays automatic on a network filesystem Strata recognises)')
    .addOption(logFormatOption())
    .action(async (dir: string, options: { name?: string; home?: string; listen?: string; logFormat?: string; poll?: boolean | string }, command: Command) => {
      const ctx = contextFor(command);
      checkListen(options.listen);
      const pollMs = options.poll === undefined ? undefined : options.poll === false ? null : options.poll === true ? DEFAULT_POLL_MS : parsePollInterval(options.poll);
      const home = await localHome(options.home);
      const project = await initProject(home, { dir, mode: 'watch', ...(options.name === undefined ? {} : { name: options.name }) });
      if (pollMs !== undefined) await setPolling(home, project.projectId, pollMs);
      const how = pollMs === undefined ? '' : pollMs === null ? ' (file events)' : ` (polling every ${pollMs / 1000} s)`;
      if (project.daemonRunning) {
        ctx.output.result({ ...project, ...(pollMs === undefined ? {} : { pollMs }) }, () =>
          ctx.output.line(`the running daemon watches ${sanitizeLine(project.dir)} (project ${project.projectId})${how}`),
        );
        return;
      }
      process.stderr.write(`strata: watching ${project.dir} (project ${project.projectId})${how} and the home's other projects; Ctrl-C stops\n`);
      await runForeground({ home, required: [project.projectId], json: ctx.output.json, ...(options.listen === undefined ? {} : { listen: options.listen }), ...(options.logFormat === undefined ? {} : { logFormat: options.logFormat }) });
    });
}
