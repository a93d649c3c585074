// `strata init DIR`: binds DIR to a new project (idempotent). Through the running daemon when there is
// one (it starts capturing at once), else directly in the home (the next `strata daemon` runs it).

import { resolve } from 'node:path';
import type { Command } from 'commander';
import type { RegisteredProject } from '../../daemon/projects.js';
import type { SyncLink } from '../../daemon/sync/link.js';
import { contextFor } from '../context.js';
import { usageError } from '../errors.js';
import { sanitizeLine } from '../output.js';
import { localHome, runningDaemon } from './daemon.js';
import { prepareLink } from './sync.js';

export type Mode = 'watch' | 'mount';

export interface InitResult extends RegisteredProject {
  home: string;
  /** true when a running daemon took the project (it captures already) */
  daemonRunning: boolean;
}

/** Why the running daemon could not start the project it took (not part of the command's output). */
export const START_ERROR: unique symbol = Symbol('startError');

export function parseMode(raw: string | undefined): Mode {
  if (raw === undefined || raw === 'watch' || raw === 'mount') return raw ?? 'watch';
  throw usageError(`--mode must be watch or mount, got '${raw}'`, { field: 'mode' });
}

/** Registers DIR in the home: through its running daemon if any, else in-process. */
export async function initProject(
  home: string,
  input: { dir: string; mode: Mode; name?: string; sync?: SyncLink; requireEmpty?: boolean; import?: boolean },
): Promise<InitResult & { [START_ERROR]?: { code: string; message: string } }> {
  const dir = resolve(input.dir);
  const extra = {
    ...(input.name === undefined ? {} : { name: input.name }),
    ...(input.sync === undefined ? {} : { sync: input.sync }),
    ...(input.requireEmpty === undefined ? {} : { requireEmpty: input.requireEmpty }),
    ...(input.import === true ? { import: true } : {}),
  };
  const client = await runningDaemon(home);
  if (client) {
    const { project, status } = await client.json<{ project: RegisteredProject; status?: { state: string; error?: { code: string; message: string } } }>(
      'POST',
      '/v1/daemon/projects',
      { json: { dir, mode: input.mode, ...extra } },
    );
    const result: InitResult & { [START_ERROR]?: { code: string; message: string } } = { ...project, home, daemonRunning: true };
    if (status?.state === 'error' && status.error !== undefined) result[START_ERROR] = status.error;
    return result;
  }
  const { openLocalEngine } = await import('../../engine/local.js');
  const { createIdGenerator } = await import('../../engine/ids.js');
  const { loadPepper, resolveEnvironment } = await import('../../server/secrets.js');
  const { ensureLocalOwner } = await import('../../daemon/owner.js');
  const { fileRegistrar, registerProject } = await import('../../daemon/projects.js');
  const { withHomeClaim } = await import('../../server/home-claim.js');
  // No daemon here: this process opens the home's databases, for this host only (home-claim.ts).
  return withHomeClaim(home, 'strata init', async () => {
    const pepper = await loadPepper(home, { create: true });
    const local = await openLocalEngine({ home });
    try {
      const access = { repository: local.repository, clock: local.clock, ids: createIdGenerator(local.clock), pepper, environment: resolveEnvironment() };
      const owner = await ensureLocalOwner(home, access);
      const project = await registerProject(fileRegistrar(home, local.engine, owner.orgId), { dir, mode: input.mode, ...extra });
      return { ...project, home, daemonRunning: false };
    } finally {
      await local.close();
    }
  });
}

export function registerInitCommand(program: Command): void {
  program
    .command('init')
    .description(
      'bind a directory to a new project; inside it, commands find the project by themselves. With --server URL --project ID, also link it to that server project (both sides are merged; a file that differs becomes a conflict copy)',
    )
    .argument('<dir>', 'project directory (created if missing)')
    .option('--mode <mode>', 'watch (version what lands in the directory) or mount (FUSE)', 'watch')
    .option('--name <name>', 'project name (default: the directory name)')
    .option('--home <dir>', 'Strata home (default: $STRATA_HOME, else $XDG_DATA_HOME/strata)')
    .action(async (dir: string, options: { mode?: string; name?: string; home?: string }, command: Command) => {
      const ctx = contextFor(command);
      const mode = parseMode(options.mode);
      const home = await localHome(options.home);
      // Linking takes the flags as given on this command line, never STRATA_SERVER_URL alone: a plain
      // `strata init` must not start sending a directory to whatever server the environment names.
      const { server, project } = ctx.flags;
      if ((server === undefined) !== (project === undefined)) throw usageError('to link to a server, pass both --server URL and --project ID', { field: server === undefined ? 'server' : 'project' });
      const linked = server !== undefined && project !== undefined ? await prepareLink(home, { server, remoteProjectId: project, apiKey: ctx.flags.apiKey }) : null;
      const result = await initProject(home, {
        dir,
        mode,
        ...(options.name === undefined ? {} : { name: options.name }),
        ...(linked === null ? {} : { sync: linked.link }),
      });
      ctx.output.result(result, () => {
        const verb = result.created ? 'initialized' : 'already initialized:';
        ctx.output.line(`${verb} ${mode} project ${sanitizeLine(result.name)} (${result.projectId}) at ${sanitizeLine(result.dir)}`);
        if (result.sync) ctx.output.line(`linked to ${sanitizeLine(result.sync.server)} project ${result.sync.remoteProjectId} as workstation ${sanitizeLine(result.sync.workstation)}`);
        if (result.daemonRunning) ctx.output.hint(result.sync ? 'the daemon syncs it now; see `strata sync status`' : 'the running daemon captures it now; see `strata status`');
        else ctx.output.hint(`start capturing: strata daemon (all projects) or strata ${mode} ${result.dir}`);
      });
    });
}
