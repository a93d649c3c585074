// `strata watch DIR`: version what lands in DIR. Adds DIR to the running daemon if there is one;
// otherwise runs the home's daemon in the foreground until Ctrl-C / SIGTERM — for every project of the
// home, not only DIR: a foreground daemon that left the other projects unversioned looked like one
// that versions them (issue 13).

import type { Command } from 'commander';
import { contextFor } from '../context.js';
import { sanitizeLine } from '../output.js';
import { checkListen } from '../foreground.js';
import { logFormatOption } from '../log-format.js';
import { localHome, runForeground } from './daemon.js';
import { initProject } from './init.js';

export function registerWatchCommand(program: Command): void {
  program
    .command('watch')
    .description('version every write in a directory (init if needed); runs in the foreground unless a daemon runs')
    .argument('<dir>', 'directory to watch (created if missing)')
    .option('--name <name>', 'project name for a new project (default: the directory name)')
    .option('--home <dir>', 'Strata home (default: $STRATA_HOME, else $XDG_DATA_HOME/strata)')
    .option('--listen <host:port>', 'loopback address of a daemon started here')
    .addOption(logFormatOption())
    .action(async (dir: string, options: { name?: string; home?: string; listen?: string; logFormat?: string }, command: Command) => {
      const ctx = contextFor(command);
      checkListen(options.listen);
      const home = await localHome(options.home);
      const project = await initProject(home, { dir, mode: 'watch', ...(options.name === undefined ? {} : { name: options.name }) });
      if (project.daemonRunning) {
        ctx.output.result(project, () => ctx.output.line(`the running daemon watches ${sanitizeLine(project.dir)} (project ${project.projectId})`));
        return;
      }
      process.stderr.write(`strata: watching ${project.dir} (project ${project.projectId}) and the home's other projects; Ctrl-C stops\n`);
      await runForeground({ home, required: [project.projectId], json: ctx.output.json, ...(options.listen === undefined ? {} : { listen: options.listen }), ...(options.logFormat === undefined ? {} : { logFormat: options.logFormat }) });
    });
}
