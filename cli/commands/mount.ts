// `strata mount DIR`: mounts the project at DIR through FUSE; every IO goes through Strata. Binds DIR
// (init in mount mode) if needed; hands it to the running daemon if there is one, otherwise serves the
// mount in the foreground until Ctrl-C / SIGTERM (which unmounts cleanly). `--import`: DIR holds files
// (a project that exists already): they are imported and the mount goes over them; unmounting leaves
// the project's files there (daemon/mount/in-place/).

import { realpath } from 'node:fs/promises';
import { resolve } from 'node:path';
import type { Command } from 'commander';
import { ERROR_CATALOGUE } from '../../engine/errors.js';
import { contextFor } from '../context.js';
import { CliError, EXIT, exitCodeForStatus } from '../errors.js';
import { sanitizeLine } from '../output.js';
import { checkListen } from '../foreground.js';
import { logFormatOption } from '../log-format.js';
import { localHome, runForeground, runningDaemon } from './daemon.js';
import { initProject, START_ERROR } from './init.js';

const PROGRESS_POLL_MS = 1_000;

export function registerMountCommand(program: Command): void {
  program
    .command('mount')
    .description('mount a project at a directory through FUSE (init if needed); runs in the foreground unless a daemon runs')
    .argument('<dir>', 'mount point (an empty directory, created if missing; with --import, one that holds files)')
    .option('--import', "the directory holds files: import them and mount over them; unmounting leaves the project's files there")
    .option('--name <name>', 'project name for a new project (default: the directory name)')
    .option('--home <dir>', 'Strata home (default: $STRATA_HOME, else $XDG_DATA_HOME/strata)')
    .option('--listen <host:port>', 'loopback address of a daemon started here')
    .addOption(logFormatOption())
    .action(async (dir: string, options: { import?: boolean; name?: string; home?: string; listen?: string; logFormat?: string }, command: Command) => {
      const ctx = contextFor(command);
      checkListen(options.listen);
      // Fail here, with FUSE_UNAVAILABLE and the pointer to watch mode, before binding anything.
      const { loadFuse } = await import('../../daemon/mount/fuse-binding.js');
      await loadFuse();
      const home = await localHome(options.home);
      // A mount left by a crashed run makes every access to DIR fail (ENOTCONN), binding it included.
      const { cleanStaleMount } = await import('../../daemon/mount/stale-mount.js');
      const stale = await cleanStaleMount(resolve(dir));
      if (stale.kind === 'cleaned') {
        process.stderr.write(`strata: removed a stale mount at ${resolve(dir)} left by a process that died\n`);
      }
      if (stale.kind === 'live' && !(await servedHere(home, dir))) {
        // Not this home's daemon: binding DIR would import (or hide) another filesystem's files.
        throw new CliError('PROJECT_DIR_TAKEN', `${resolve(dir)} is already mounted by another process: unmount it first`, { exitCode: EXIT.conflict });
      }
      const importing = options.import === true;
      const stopProgress = importing ? await showImportProgress(home, dir) : () => {};
      let project: Awaited<ReturnType<typeof initProject>>;
      try {
        project = await initProject(home, {
          dir,
          mode: 'mount',
          ...(options.name === undefined ? {} : { name: options.name }),
          ...(importing ? { import: true } : {}),
        });
      } finally {
        stopProgress();
      }
      const startError = project[START_ERROR];
      if (startError !== undefined) {
        const status = (ERROR_CATALOGUE as Record<string, { status: number }>)[startError.code]?.status;
        throw new CliError(startError.code, `${project.dir} could not start: ${startError.message}`, { exitCode: status === undefined ? EXIT.unexpected : exitCodeForStatus(status) });
      }
      if (project.inPlace === true) await warnIfInside(ctx, project.dir);
      const over = project.inPlace === true ? ` over its files (\`strata unmount ${project.dir}\` leaves them in place)` : '';
      if (project.daemonRunning) {
        ctx.output.result(project, () => ctx.output.line(`the running daemon mounts project ${project.projectId} at ${sanitizeLine(project.dir)}${sanitizeLine(over)}`));
        return;
      }
      process.stderr.write(
        project.inPlace === true
          ? `strata: importing ${project.dir} and mounting project ${project.projectId} over it; Ctrl-C unmounts and leaves the project's files there\n`
          : `strata: mounting project ${project.projectId} at ${project.dir}; Ctrl-C unmounts\n`,
      );
      await runForeground({ home, required: [project.projectId], json: ctx.output.json, ...(options.listen === undefined ? {} : { listen: options.listen }), ...(options.logFormat === undefined ? {} : { logFormat: options.logFormat }) });
    });

  program
    .command('unmount')
    .alias('umount')
    .description("stop serving a mounted project until `strata mount DIR`; an in-place mount (--import) writes the project's files back into DIR")
    .argument('<dir>', 'the mount point')
    .option('--home <dir>', 'Strata home (default: $STRATA_HOME, else $XDG_DATA_HOME/strata)')
    .action(async (dir: string, options: { home?: string }, command: Command) => {
      const ctx = contextFor(command);
      const home = await localHome(options.home);
      const { unmountProject } = await import('./unmount.js');
      const result = await unmountProject(home, dir);
      ctx.output.result(result, () => {
        const at = sanitizeLine(result.dir);
        if (!result.wasMounted) ctx.output.line(`${at} was not mounted; it stays unmounted until \`strata mount ${at}\``);
        else if (result.writeBack !== null) {
          const w = result.writeBack;
          ctx.output.line(`unmounted ${at}: the project's files are in place (${w.written} written, ${w.removed} removed, ${w.movedBack} unversioned entries moved back)`);
          if (w.skipped > 0) ctx.output.warn(`${w.skipped} path(s) were left as they were: see the daemon log`);
        } else ctx.output.line(`unmounted ${at} (its files stay in Strata; \`strata mount ${at}\` shows them again)`);
      });
    });
}

/** Whether this home's running daemon is the one serving the mount at `dir` (a second `strata mount DIR` is no error). */
async function servedHere(home: string, dir: string): Promise<boolean> {
  const client = await runningDaemon(home);
  if (client === null) return false;
  const { readDaemonConfig } = await import('../../daemon/config.js');
  const real = await realpath(resolve(dir)).catch(() => resolve(dir));
  return readDaemonConfig(home).projects.some((p) => p.dir === real && p.mode === 'mount' && p.unmounted !== true);
}

/**
 * A large import through a running daemon takes a while before the POST answers: its progress (the
 * daemon's status for that directory) goes to stderr meanwhile. Without a daemon the import runs in
 * this process, whose log (stderr) says how far it is.
 */
async function showImportProgress(home: string, dir: string): Promise<() => void> {
  const client = await runningDaemon(home);
  if (client === null) return () => {};
  const wanted = new Set([resolve(dir), await realpath(resolve(dir)).catch(() => resolve(dir))]);
  let last = '';
  let stopped = false;
  const timer = setInterval(() => {
    void client
      .json<{ projects: Array<{ dir: string; state: string; scan: { done: number; total: number; captured: number; finished: boolean } | null }> }>('GET', '/v1/daemon/status')
      .then((status) => {
        const scan = status.projects.find((p) => wanted.has(p.dir))?.scan;
        if (stopped || scan === null || scan === undefined || scan.finished) return;
        const line = `strata: importing ${dir}: ${scan.done} of ${scan.total} files looked at, ${scan.captured} versioned`;
        if (line !== last) process.stderr.write(`${line}\n`);
        last = line;
      })
      .catch(() => undefined);
  }, PROGRESS_POLL_MS);
  return () => {
    stopped = true;
    clearInterval(timer);
  };
}

/**
 * A shell whose working directory is DIR (or below it) keeps the directory under the mount: it sees
 * neither the mount nor `.git/` (moved to the backing directory), and what it writes there is only
 * versioned at the unmount, under whatever the mount did meanwhile.
 */
async function warnIfInside(ctx: ReturnType<typeof contextFor>, dir: string): Promise<void> {
  const real = await realpath(dir).catch(() => dir);
  const cwd = process.cwd();
  if (cwd !== real && !cwd.startsWith(`${real}/`)) return;
  ctx.output.warn(`the working directory is inside ${real}: a shell there still sees the files under the mount, not the mount (its writes are versioned only at the unmount); \`cd "$PWD"\` enters the mount`);
}
