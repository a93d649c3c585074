// `strata status`: the daemon and each project's capture state (watching, scanning, guarded, error),
// pending work, last version and recent errors; watch mode's last reconciliation, mount mode's open
// files and FUSE operation counts. `strata guard reset` resumes recording deletions
// after the mass-delete guard tripped.

import type { Command } from 'commander';
import type { DaemonStatus } from '../../daemon/daemon.js';
import type { ProjectStatus } from '../../daemon/project-runner.js';
import { contextFor } from '../context.js';
import { discoverProject } from '../discover.js';
import { CliError, EXIT } from '../errors.js';
import { refuseIfElsewhere } from '../home-elsewhere.js';
import { elsewhereLine, type HomeElsewhere, homeElsewhere } from '../home-elsewhere.js';
import { readHomeProjects } from '../home-projects.js';
import { formatTime, plural, sanitizeLine } from '../output.js';
import { localHome, runningDaemon } from './daemon.js';

interface StatusDocument {
  running: boolean;
  home: string;
  /** another host holds the home (server/home-claim.ts): its daemon runs there, not here */
  elsewhere: HomeElsewhere | null;
  daemon: DaemonStatus['daemon'] | null;
  projects: Array<ProjectStatus | IdleProject>;
}

/**
 * A project of the home nothing runs: the daemon is not running, the project was unmounted
 * (`strata unmount`), or no directory of daemon.json is its (a project of the home's metadata only:
 * `dir` null). Its name comes from the home's metadata.
 */
interface IdleProject {
  projectId: string;
  name: string | null;
  dir: string | null;
  mode: string;
  state: 'stopped' | 'unmounted' | 'no directory';
}

function scanText(project: ProjectStatus): string {
  const scan = project.scan;
  if (!scan || scan.finished) return '';
  return ` ${scan.kind} scan ${scan.done}/${scan.total}`;
}

/** ` (polling every 5 s)`; a daemon of an older version sends `backend` only. */
function pollText(p: ProjectStatus): string {
  if (p.backend !== 'polling') return '';
  const poll = p.poll ?? null;
  if (poll === null) return ' (polling)';
  return ` (polling every ${duration(poll.intervalMs)}${poll.reason === 'setting' ? ', --poll' : ''})`;
}

function duration(ms: number): string {
  if (ms < 1_000) return `${ms} ms`;
  if (ms < 120_000) return `${(ms / 1_000).toFixed(1)} s`;
  return `${Math.round(ms / 60_000)} min`;
}

/** Lines under the table: what each mode adds (reconciliation, mount statistics). */
function renderDetails(ctx: ReturnType<typeof contextFor>, p: ProjectStatus, label: string): void {
  // `?? null`: a daemon of an older version does not send these fields.
  const r = p.reconcile ?? null;
  if (r !== null) {
    const every = r.intervalMs > 0 ? `every ${duration(r.intervalMs)}` : 'only after signs of lost events';
    const last = r.last;
    const text = last
      ? `last ${formatTime(last.finishedAt)} (${last.reason}, ${duration(last.durationMs)}): ${last.examined} files examined, ${last.hashed} hashed, ${last.missed} missed by events`
      : 'not run yet';
    ctx.output.line(`${label}: reconciliation ${every}${r.running ? ', running now' : ''}; ${text}`);
  }
  const s = p.sync ?? null;
  if (s !== null) {
    const conflicts = s.conflicts.length > 0 ? `, ${`${s.conflicts.length} conflict cop${s.conflicts.length === 1 ? 'y' : 'ies'}`} (strata sync status)` : '';
    const error = s.lastError && !s.inSync ? `; last error: ${sanitizeLine(s.lastError.message)}` : '';
    ctx.output.line(
      `${label}: sync with ${sanitizeLine(s.server)}: ${s.inSync ? 'in sync' : 'not in sync'} (${s.state}${s.readOnly ? ', read-only' : ''}), ${plural(s.queue.versions, 'version')} queued${conflicts}${error}`,
    );
    // Why not, as `strata sync status` says it (sync-verdict.ts); an older daemon sends no reasons.
    for (const reason of s.reasons ?? []) ctx.output.line(`${label}: not in sync: ${sanitizeLine(reason.message)}`);
  }
  const m = p.mount ?? null;
  if (m === null) return;
  ctx.output.line(
    `${label}: mount: ${plural(p.captured, 'version')} captured, ${plural(m.openFiles, 'open file')}, ${m.dirty} changed not yet versioned (${m.staged} staged), ${p.pending} pending, ${plural(p.errors.length, 'error')}`,
  );
  const ops = Object.entries(m.ops).sort((a, b) => b[1].totalMs - a[1].totalMs);
  if (ops.length === 0) return;
  ctx.output.table(
    ['FUSE OP', 'COUNT', 'AVG µs', 'TOTAL ms'],
    ops.map(([op, s]) => [op, s.count, s.avgUs, s.totalMs]),
    { rightAlign: [1, 2, 3] },
  );
}

function render(ctx: ReturnType<typeof contextFor>, doc: StatusDocument): void {
  if (doc.elsewhere !== null) {
    ctx.output.line(`daemon: on ${sanitizeLine(doc.elsewhere.host)}, not here: ${sanitizeLine(elsewhereLine(doc.home, doc.elsewhere))}`);
    ctx.output.warn(`this host cannot use the home while ${sanitizeLine(doc.elsewhere.host)} does (one host at a time): run Strata commands there, or stop it there first`);
  } else if (!doc.running) ctx.output.line(`daemon: not running (home ${sanitizeLine(doc.home)}); start it with \`strata daemon\``);
  else {
    const d = doc.daemon!;
    ctx.output.line(`daemon: pid ${d.pid}, up ${d.uptimeSeconds} s, ${d.url}, home ${sanitizeLine(d.home)}`);
    // `?.`: a daemon of an older version does not send it.
    const claim = d.homeClaim;
    if (claim?.network) {
      const proof = claim.locks === 'shared' ? 'file locks and a lease' : `a lease renewed every ${Math.round(claim.renewMs / 1000)} s${claim.locks === 'none' ? ' (the filesystem has no locks)' : ' (its locks do not reach other hosts)'}`;
      ctx.output.line(`home: on ${sanitizeLine(claim.network)}, held by this host (${claim.host}) with ${proof}; another host's Strata is refused meanwhile`);
    }
    const staging = d.staging;
    if (staging?.where === 'local' && doc.projects.some((p) => p.mode === 'mount')) ctx.output.line(`mounts stage their writes in ${sanitizeLine(staging.dir)} (this machine's disk)`);
    if (staging?.warning) ctx.output.warn(sanitizeLine(staging.warning));
  }
  if (doc.projects.length === 0) {
    if (doc.elsewhere === null) ctx.output.hint('no projects: strata init DIR (or strata watch DIR)');
    return;
  }
  ctx.output.table(
    ['PROJECT', 'MODE', 'STATE', 'PENDING', 'CAPTURED', 'LAST VERSION', 'DIR'],
    doc.projects.map((p) => {
      if (!('captured' in p)) return [p.name ?? p.projectId, p.mode, p.state, '', '', '', p.dir ?? '-'];
      const last = p.lastVersion ? `${p.lastVersion.path} ${formatTime(p.lastVersion.timestamp)}` : '';
      return [p.name ?? p.projectId, p.mode, `${p.state}${pollText(p)}${scanText(p)}`, p.pending, p.captured, last, p.dir];
    }),
  );
  for (const p of doc.projects) {
    if (!('captured' in p)) {
      if (p.state === 'unmounted' && p.dir !== null) ctx.output.hint(`${sanitizeLine(p.dir)}: unmounted; its history is kept, and \`strata mount ${sanitizeLine(p.dir)}\` mounts it again`);
      continue;
    }
    const label = sanitizeLine(p.name ?? p.projectId);
    renderDetails(ctx, p, label);
    // Mount mode says it in its own warning (below): there the deletions are refused, not unrecorded.
    if (p.massDeleteGuard.tripped && p.mode !== 'mount') {
      ctx.output.warn(
        `${label}: MASS-DELETE GUARD TRIPPED since ${formatTime(p.massDeleteGuard.since)}: ${p.massDeleteGuard.missing} deletions not recorded (files kept). ` +
          'If the deletions are real: strata guard reset',
      );
    }
    for (const warning of p.warnings) ctx.output.warn(`${label}: ${warning}`);
    if (p.error) ctx.output.warn(`${label}: ${p.error.code}: ${p.error.message}`);
    for (const error of p.errors.slice(-3)) ctx.output.warn(`${label}: ${formatTime(error.time)} ${error.path ?? ''} ${error.code}: ${error.message}`);
    if (p.errors.length > 3) ctx.output.warn(`${label}: ${plural(p.errors.length - 3, 'earlier error')} (strata status --json lists them)`);
  }
}

export function registerStatusCommands(program: Command): void {
  program
    .command('status')
    .description('daemon and per-project capture state, pending work, last version, errors')
    .option('--home <dir>', 'Strata home (default: $STRATA_HOME, else $XDG_DATA_HOME/strata)')
    .action(async (options: { home?: string }, command: Command) => {
      const ctx = contextFor(command);
      const home = await localHome(options.home);
      const client = await runningDaemon(home);
      const { readDaemonConfig } = await import('../../daemon/config.js');
      const config = readDaemonConfig(home);
      // The home's databases are another host's while it holds them: not even read from here (a
      // reader takes part in SQLite's shared-memory index, which spans one host only).
      const elsewhere = client === null ? homeElsewhere(home) : null;
      const names = new Map(elsewhere === null ? (await readHomeProjects(home)).map((p) => [p.projectId, p.name]) : []);
      // An unmounted project is still the home's (its history, its directory): listed, not left out.
      const idle = (p: (typeof config.projects)[number]): IdleProject => ({
        projectId: p.projectId,
        name: names.get(p.projectId) ?? null,
        dir: p.dir,
        mode: p.mode,
        state: p.unmounted === true ? 'unmounted' : 'stopped',
      });
      const configured = new Set(config.projects.map((p) => p.projectId));
      // Projects of the metadata that no directory runs: their history is in the home all the same.
      const detached = [...names].filter(([projectId]) => !configured.has(projectId)).map(([projectId, name]): IdleProject => ({ projectId, name, dir: null, mode: '-', state: 'no directory' }));
      let doc: StatusDocument;
      if (client) {
        const status = await client.json<DaemonStatus>('GET', '/v1/daemon/status');
        const running = new Set(status.projects.map((p) => p.projectId));
        doc = { running: true, home, elsewhere: null, daemon: status.daemon, projects: [...status.projects, ...config.projects.filter((p) => !running.has(p.projectId)).map(idle), ...detached] };
      } else {
        doc = { running: false, home, elsewhere, daemon: null, projects: [...config.projects.map(idle), ...detached] };
      }
      ctx.output.result(doc, () => render(ctx, doc));
    });

  const guard = program.command('guard').description('the mass-delete guard');
  guard
    .command('reset')
    .description('resume recording deletions after the mass-delete guard tripped (records the held-back ones)')
    .option('--home <dir>', 'Strata home')
    .action(async (options: { home?: string }, command: Command) => {
      const ctx = contextFor(command);
      const home = await localHome(options.home);
      const projectId = ctx.flags.project ?? process.env['STRATA_PROJECT_ID'] ?? discoverProject()?.projectId;
      if (!projectId) throw new CliError('NO_PROJECT', 'no project: run inside a project directory or pass --project ID', { exitCode: EXIT.usage });
      const client = await runningDaemon(home);
      if (!client) {
        refuseIfElsewhere(home, '`strata guard reset`');
        throw new CliError('SERVER_UNREACHABLE', `the daemon for ${home} is not running`, { exitCode: EXIT.unreachable });
      }
      const status = await client.json<ProjectStatus>('POST', `/v1/daemon/projects/${encodeURIComponent(projectId)}/guard/reset`, { json: {} });
      ctx.output.result(status, () => ctx.output.line(`guard reset for ${sanitizeLine(status.name ?? projectId)}: deletions are recorded again`));
    });
}
