// `strata mount DIR`: mounts the project at DIR through FUSE; every IO goes through Strata. Binds DIR
// (init in mount mode) if needed; hands it to the running daemon if there is one, otherwise serves the
// mount in the foreground until Ctrl-C / SIGTERM (which unmounts cleanly).

import { resolve } from 'node:path';
import type { Command } from 'commander';
import { contextFor } from '../context.js';
import { sanitizeLine } from '../output.js';
import { checkListen } from '../foreground.js';
import { localHome, runForeground } from './daemon.js';
import { initProject } from './init.js';

export function registerMountCommand(program: Command): void {
  program
    .command('mount')
    .description('mount a project at a directory through FUSE (init if needed); runs in the foreground unless a daemon runs')
    .argument('<dir>', 'mount point (an empty directory; created if missing)')
    .option('--name <name>', 'project name for a new project (default: the directory name)')
    .option('--home <dir>', 'Strata home (default: $STRATA_HOME, else $XDG_DATA_HOME/strata)')
    .option('--listen <host:port>', 'loopback address of a daemon started here')
    .action(async (dir: string, options: { name?: string; home?: string; listen?: string }, command: Command) => {
      const ctx = contextFor(command);
      checkListen(options.listen);
      // Fail here, with FUSE_UNAVAILABLE and the pointer to watch mode, before binding anything.
      const { loadFuse } = await import('../../daemon/mount/fuse-binding.js');
      await loadFuse();
      // A mount left by a crashed run makes every access to DIR fail (ENOTCONN), binding it included.
      const { cleanStaleMount } = await import('../../daemon/mount/stale-mount.js');
      if ((await cleanStaleMount(resolve(dir))).kind === 'cleaned') {
        process.stderr.write(`strata: removed a stale mount at ${resolve(dir)} left by a process that died\n`);
      }
      const home = await localHome(options.home);
      const project = await initProject(home, { dir, mode: 'mount', ...(options.name === undefined ? {} : { name: options.name }) });
      if (project.daemonRunning) {
        ctx.output.result(project, () => ctx.output.line(`the running daemon mounts project ${project.projectId} at ${sanitizeLine(project.dir)}`));
        return;
      }
      process.stderr.write(`strata: mounting project ${project.projectId} at ${project.dir}; Ctrl-C unmounts\n`);
      await runForeground({ home, required: [project.projectId], json: ctx.output.json, ...(options.listen === undefined ? {} : { listen: options.listen }) });
    });
}
