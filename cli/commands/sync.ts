// Sync from the command line (issue 14): `strata init DIR --server URL --project ID` links a directory
// to a server project (init.ts), `strata clone URL ID DIR [--mount]` brings one onto this machine,
// `strata sync status` shows each linked project's replication, `strata sync wait` returns once
// everything made here is on the server and everything there is here, `strata sync confirm` applies
// incoming deletions the mass-delete guard holds.

import type { Command } from 'commander';
import type { SyncStatus } from '../../daemon/sync/project-sync.js';
import { defaultWorkstation, normalizeServerUrl, readServerKey, type SyncLink, saveServerKey } from '../../daemon/sync/link.js';
import { createClient } from '../client.js';
import { loadLogin, tokenSourceFor } from '../credentials.js';
import { contextFor } from '../context.js';
import { discoverProject } from '../discover.js';
import { CliError, EXIT, usageError } from '../errors.js';
import { refuseIfElsewhere } from '../home-elsewhere.js';
import { formatBytes, formatTime, plural, sanitizeLine } from '../output.js';
import { CLI_VERSION } from '../version.js';
import { homeForNewProject, localHome, runningDaemon } from './daemon.js';
import { initProject } from './init.js';

interface LinkedProject {
  projectId: string;
  name: string | null;
  dir: string;
  mode: string;
  sync: SyncStatus;
}

/**
 * Checks that the server knows the project and accepts the key, then keeps the key in the home
 * (0600). The key: --api-key, else STRATA_API_KEY, else the one kept for this server.
 */
export async function prepareLink(home: string, input: { server: string; remoteProjectId: string; apiKey?: string | undefined }): Promise<{ link: SyncLink; name: string }> {
  const server = normalizeServerUrl(input.server);
  const apiKey = input.apiKey ?? process.env['STRATA_API_KEY'] ?? readServerKey(home, server) ?? undefined;
  // Without a key, a person signed in to the server (`strata login`) links with their sign-in, and the
  // daemon's sync then uses it too (refreshing it as it goes).
  const signedIn = !apiKey && loadLogin(server) !== null;
  if (!apiKey && !signedIn) {
    throw new CliError('NO_CREDENTIALS', `no credentials for ${server}: run \`strata login --server ${server}\`, or set STRATA_API_KEY (an \`rk.…\` key of that server)`, {
      exitCode: EXIT.auth,
    });
  }
  const client = createClient({ serverUrl: server, apiKey, ...(signedIn ? { tokenSource: tokenSourceFor(server) } : {}), version: CLI_VERSION });
  const project = await client.json<{ projectId: string; name: string }>('GET', `/v1/projects/${encodeURIComponent(input.remoteProjectId)}`);
  if (apiKey) await saveServerKey(home, server, apiKey);
  return { link: { server, remoteProjectId: project.projectId, workstation: defaultWorkstation() }, name: project.name };
}

/** `sync wait`'s look at the daemon's sync status (see there). */
const WAIT_POLL_MS = 100;

async function linkedProjects(home: string, options: { verify?: boolean } = {}): Promise<LinkedProject[]> {
  const client = await runningDaemon(home);
  if (!client) {
    refuseIfElsewhere(home, 'sync');
    throw new CliError('DAEMON_NOT_RUNNING', `the Strata daemon of ${home} is not running: sync runs in it (start it with \`strata daemon\`)`, {
      exitCode: EXIT.unreachable,
    });
  }
  return (await client.json<{ projects: LinkedProject[] }>('GET', options.verify === true ? '/v1/daemon/sync?verify=true' : '/v1/daemon/sync')).projects;
}

function age(seconds: number | null): string {
  if (seconds === null) return '-';
  if (seconds < 120) return `${seconds} s`;
  if (seconds < 7200) return `${Math.round(seconds / 60)} min`;
  return `${Math.round(seconds / 3600)} h`;
}

/** `[########------------]  40% 8,000/20,000 versions pushed (12.0 MB to go), 35 pulled` */
export function progressLine(pushedSinceStart: number, queued: number, queuedBytes: number, pulled: number): string {
  const total = pushedSinceStart + queued;
  const fraction = total === 0 ? 1 : pushedSinceStart / total;
  const width = 20;
  const filled = Math.round(fraction * width);
  const percent = `${Math.floor(fraction * 100)}%`.padStart(4);
  return `[${'#'.repeat(filled)}${'-'.repeat(width - filled)}] ${percent} ${pushedSinceStart.toLocaleString('en-US')}/${total.toLocaleString('en-US')} versions pushed (${formatBytes(queuedBytes)} to go), ${pulled.toLocaleString('en-US')} pulled`;
}

function renderStatus(ctx: ReturnType<typeof contextFor>, projects: LinkedProject[]): void {
  if (projects.length === 0) {
    ctx.output.line('no project is linked to a server (strata init DIR --server URL --project ID)');
    return;
  }
  ctx.output.table(
    ['PROJECT', 'IN SYNC', 'STATE', 'QUEUE', 'BYTES', 'OLDEST', 'LAST PUSH', 'LAST PULL', 'CONFLICTS'],
    projects.map(({ name, projectId, sync }) => [
      sanitizeLine(name ?? projectId),
      sync.inSync ? 'yes' : 'no',
      `${sync.state}${sync.readOnly ? ' (read-only)' : ''}`,
      sync.queue.versions,
      formatBytes(sync.queue.bytes),
      age(sync.queue.oldestAgeSeconds),
      formatTime(sync.lastPushAt),
      formatTime(sync.lastPullAt),
      sync.conflicts.length,
    ]),
    { rightAlign: [3, 4, 8] },
  );
  for (const { name, projectId, dir, sync } of projects) {
    const label = sanitizeLine(name ?? projectId);
    ctx.output.line(`${label}: ${sanitizeLine(dir)} ⇄ ${sanitizeLine(sync.server)} project ${sync.remoteProjectId} as ${sanitizeLine(sync.workstation)}`);
    // Why it is not in sync, each fact once (an older daemon sends no reasons).
    for (const reason of sync.reasons ?? []) ctx.output.line(`  not in sync: ${sanitizeLine(reason.message)}`);
    if (sync.readOnly) ctx.output.line(`  read-only: the server does not accept changes from this workstation; they stay queued`);
    if (sync.held) {
      ctx.output.line(
        `  HELD: the server's changes delete ${plural(sync.held.deletes, 'file')} of ${sync.held.files}${sync.held.recent ? ` (after ${plural(sync.held.recent, 'deletion')} they made here in the last minutes)` : ''}; none of those ${sync.held.deletes} was deleted here. Apply them with \`strata sync confirm --project ${projectId}\``,
      );
    }
    if (sync.lastError) {
      const retry = sync.lastError.retryAt ? `; retrying at ${formatTime(sync.lastError.retryAt)}` : '';
      ctx.output.line(`  last error ${formatTime(sync.lastError.at)}: ${sanitizeLine(sync.lastError.message)}${retry}`);
    }
    for (const conflict of sync.conflicts) {
      ctx.output.line(`  conflict: ${sanitizeLine(conflict.path)} (a copy of ${sanitizeLine(conflict.of)}: compare, keep what you want, delete the copy)`);
    }
  }
}

export function registerSyncCommands(program: Command): void {
  program
    .command('clone')
    .description("bring a server project onto this machine: its files and their history, kept in sync")
    .argument('<url>', 'the Strata server')
    .argument('<projectId>', 'the project on the server')
    .argument('<dir>', 'an empty or new directory')
    .option('--mount', 'mount the project (FUSE) instead of watching an ordinary directory')
    .option('--name <name>', 'local project name (default: the server project name)')
    .option('--home <dir>', 'Strata home (default: $STRATA_HOME, else $XDG_DATA_HOME/strata)')
    .action(async (url: string, remoteProjectId: string, dir: string, options: { mount?: boolean; name?: string; home?: string }, command: Command) => {
      const ctx = contextFor(command);
      const home = await homeForNewProject(options.home);
      const { link, name } = await prepareLink(home, { server: url, remoteProjectId, apiKey: ctx.flags.apiKey });
      const mode = options.mount === true ? 'mount' : 'watch';
      const result = await initProject(home, { dir, mode, name: options.name ?? name, sync: link, requireEmpty: true });
      ctx.output.result(result, () => {
        ctx.output.line(`cloned ${sanitizeLine(link.server)} project ${link.remoteProjectId} into ${sanitizeLine(result.dir)} (${mode} mode)`);
        if (result.daemonRunning) ctx.output.hint('the daemon is bringing the files down: `strata sync wait` returns when they are all here');
        else ctx.output.hint(`start the daemon to bring the files down: strata daemon (or strata ${mode} ${result.dir})`);
      });
    });

  const sync = program.command('sync').description('replication of linked projects to their server');

  sync
    .command('status')
    .description('queue depth, bytes pending, oldest change, last push and pull, errors and conflicts of each linked project')
    .option('--home <dir>', 'Strata home (default: $STRATA_HOME, else $XDG_DATA_HOME/strata)')
    .action(async (options: { home?: string }, command: Command) => {
      const ctx = contextFor(command);
      const home = await localHome(options.home);
      const projects = await linkedProjects(home);
      ctx.output.result({ projects }, () => renderStatus(ctx, projects));
    });

  sync
    .command('wait')
    .description('wait until everything made here is on the server and everything there is here (exit 0); exit 4 (5: credentials) at once when something needs you, 7 at the timeout')
    .option('--timeout <seconds>', 'give up after this long', '600')
    .option('--home <dir>', 'Strata home (default: $STRATA_HOME, else $XDG_DATA_HOME/strata)')
    .action(async (options: { timeout: string; home?: string }, command: Command) => {
      const ctx = contextFor(command);
      const timeout = Number(options.timeout);
      if (!Number.isFinite(timeout) || timeout < 0) throw usageError('--timeout must be a number of seconds', { field: 'timeout' });
      const home = await localHome(options.home);
      const deadline = Date.now() + timeout * 1000;
      const tty = !ctx.output.json && process.stderr.isTTY;
      // In sync twice in a row, a poll apart, the second time with each server asked at that moment
      // whether it has anything newer: a change that arrived between two looks is not missed, and the
      // answer is the server's word, not the last long poll's. A poll is 100 ms (a status read of the
      // daemon's memory): at 200 the wait ended ~400 ms after the last file was down, a tenth of a
      // 5,000-file first sync (bench/sync-clone.ts).
      // Blocked likewise: twice in a row, the second look verified, so a state sync leaves by itself a
      // moment later (the server's answer in flight) does not end the wait.
      let previousInSync = false;
      let previousBlocked = false;
      let projects: LinkedProject[] = [];
      let pushedAtStart: number | undefined;
      for (;;) {
        const verified: boolean = previousInSync || previousBlocked;
        projects = await linkedProjects(home, { verify: verified });
        const waiting = projects.filter((p) => !p.sync.inSync);
        if (waiting.length === 0 && verified) break;
        previousInSync = waiting.length === 0;
        // Something only the user can end (held deletions, a refused key, a full disk): said now, not at the timeout.
        const blocked = waiting.find((p) => (p.sync.reasons ?? []).some((r) => r.needsYou));
        previousBlocked = blocked !== undefined && !verified;
        if (blocked && verified) {
          if (tty) process.stderr.write('\r\u001b[K');
          const needs = blocked.sync.reasons.filter((r) => r.needsYou);
          const credentials = needs.some((r) => r.code === 'PAUSED');
          throw new CliError('SYNC_BLOCKED', `${blocked.name ?? blocked.projectId} is not in sync: ${needs.map((r) => r.message).join('; ')}`, {
            exitCode: credentials ? EXIT.auth : EXIT.conflict,
            details: { projects },
          });
        }
        if (Date.now() >= deadline && !previousBlocked) {
          if (tty) process.stderr.write('\r\u001b[K');
          const why = (p: LinkedProject) => (p.sync.reasons ?? []).map((r) => r.message).join('; ') || p.sync.state;
          throw new CliError('SYNC_TIMEOUT', `not in sync after ${timeout} s: ${waiting.map((p) => `${p.name ?? p.projectId} (${why(p)})`).join(', ')}`, {
            exitCode: EXIT.unreachable,
            details: { projects },
          });
        }
        if (tty) {
          const queued = waiting.reduce((n, p) => n + p.sync.queue.versions, 0);
          const bytes = waiting.reduce((n, p) => n + p.sync.queue.bytes, 0);
          const pushed = projects.reduce((n, p) => n + p.sync.pushed, 0);
          const pulled = projects.reduce((n, p) => n + p.sync.pulled, 0);
          pushedAtStart ??= pushed;
          process.stderr.write(`\r${progressLine(pushed - pushedAtStart, queued, bytes, pulled)}\u001b[K`);
        }
        await new Promise((resolve) => setTimeout(resolve, WAIT_POLL_MS));
      }
      if (tty) process.stderr.write('\r\u001b[K');
      ctx.output.result({ inSync: true, projects }, () => ctx.output.line(`in sync: ${projects.length === 0 ? 'no linked project' : projects.map((p) => sanitizeLine(p.name ?? p.projectId)).join(', ')}`));
    });

  sync
    .command('confirm')
    .description("apply the server's deletions that the incoming mass-delete guard holds")
    .option('--home <dir>', 'Strata home (default: $STRATA_HOME, else $XDG_DATA_HOME/strata)')
    .action(async (options: { home?: string }, command: Command) => {
      const ctx = contextFor(command);
      const home = await localHome(options.home);
      const projectId = ctx.flags.project ?? discoverProject(process.cwd())?.projectId;
      if (!projectId) throw usageError('which project? pass --project ID or run it inside the project directory', { field: 'project' });
      const client = await runningDaemon(home);
      if (!client) {
        refuseIfElsewhere(home, '`strata sync confirm`');
        throw new CliError('DAEMON_NOT_RUNNING', `the Strata daemon of ${home} is not running`, { exitCode: EXIT.unreachable });
      }
      const status = await client.json<SyncStatus>('POST', `/v1/daemon/projects/${encodeURIComponent(projectId)}/sync/confirm`, { json: {} });
      ctx.output.result(status, () => ctx.output.line('the held deletions will be applied'));
    });
}
