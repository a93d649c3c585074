// `strata git clone|pull`: the project's snapshot chain as a git repository, with the real git binary
// doing the git side. Clone imports the whole chain (one commit per snapshot on main, tags as tags);
// pull asks only for what follows the local main (GET fs/git/upload?have=) and fast-forwards the work
// tree. The clone records the project and server in its git config (never the API key).
import { spawn } from 'node:child_process';
import { mkdir, readdir, rm, stat } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { Readable } from 'node:stream';
import type { Command } from 'commander';
import type { GitReceiveResult, GitRefs } from '../../engine/engine-api.js';
import { contextFor } from '../context.js';
import { discoverProject } from '../discover.js';
import { CliError, EXIT } from '../errors.js';
import { refuseIfElsewhere } from '../home-elsewhere.js';
import { refuseInsideProject } from '../target-dir.js';
import { runningDaemon } from './daemon.js';

interface GitResult {
  stdout: string;
}

/** Runs git (async, no shell), optionally streaming `input` into its stdin. */
function runGit(cwd: string, args: string[], input?: AsyncIterable<Uint8Array>): Promise<GitResult> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn('git', args, { cwd, stdio: ['pipe', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (chunk: Buffer) => out.push(chunk));
    child.stderr.on('data', (chunk: Buffer) => err.push(chunk));
    child.on('error', (error) => reject(new CliError('GIT_FAILED', `could not run git: ${error.message}`, { exitCode: EXIT.unexpected, cause: error })));
    child.on('close', (code) => {
      if (code === 0) resolvePromise({ stdout: Buffer.concat(out).toString('utf8') });
      else reject(new CliError('GIT_FAILED', `git ${args[0]} failed (exit ${code}): ${Buffer.concat(err).toString('utf8').trim()}`, { exitCode: EXIT.unexpected }));
    });
    child.stdin.on('error', () => {
      // git exited early; its exit code and stderr tell why
    });
    if (input === undefined) child.stdin.end();
    else Readable.from(input).pipe(child.stdin);
  });
}

async function revParse(cwd: string, rev: string): Promise<string | null> {
  try {
    return (await runGit(cwd, ['rev-parse', '-q', '--verify', `${rev}^{commit}`])).stdout.trim() || null;
  } catch {
    return null;
  }
}

async function gitConfig(cwd: string, key: string): Promise<string | null> {
  try {
    return (await runGit(cwd, ['config', '--get', key])).stdout.trim() || null;
  } catch {
    return null;
  }
}

/** git fast-export's stdout (the request body of a push); rejects `done` if git fails. */
function exportStream(cwd: string, args: string[]): { body: Readable; done: Promise<void> } {
  const child = spawn('git', ['fast-export', ...args], { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
  const err: Buffer[] = [];
  child.stderr.on('data', (chunk: Buffer) => err.push(chunk));
  const done = new Promise<void>((resolvePromise, reject) => {
    child.on('error', (error) => reject(new CliError('GIT_FAILED', `could not run git: ${error.message}`, { exitCode: EXIT.unexpected })));
    child.on('close', (code) => {
      if (code === 0) resolvePromise();
      else reject(new CliError('GIT_FAILED', `git fast-export failed (exit ${code}): ${Buffer.concat(err).toString('utf8').trim()}`, { exitCode: EXIT.unexpected }));
    });
  });
  return { body: child.stdout, done };
}

async function projectOf(ctx: ReturnType<typeof contextFor>, cwd: string): Promise<string> {
  // The clone's own strata.project wins over an exported STRATA_PROJECT_ID (as a project directory does).
  const projectId = ctx.flags.project ?? (await gitConfig(cwd, 'strata.project')) ?? process.env['STRATA_PROJECT_ID'];
  if (!projectId) throw new CliError('NOT_A_STRATA_CLONE', 'this is not a clone made by `strata git clone` (no strata.project in git config); pass --project', { exitCode: EXIT.usage });
  return projectId;
}

interface SyncTarget {
  cwd: string;
  projectId: string;
  client: ReturnType<ReturnType<typeof contextFor>['client']>;
  base: string;
}

/**
 * A clone made from a daemon's project (`strata git clone` run in the project's directory) records
 * that daemon's home: its pulls and pushes go to that home's running daemon with its owner key, as
 * they would inside the project directory, which the clone is not (without this they had no
 * credentials: NO_CREDENTIALS). --server or --api-key choose explicitly instead.
 */
async function syncTarget(ctx: ReturnType<typeof contextFor>, cwd: string): Promise<SyncTarget> {
  const projectId = await projectOf(ctx, cwd);
  const base = `/v1/projects/${encodeURIComponent(projectId)}`;
  const home = ctx.flags.server === undefined && ctx.flags.apiKey === undefined ? await gitConfig(cwd, 'strata.home') : null;
  if (home !== null) {
    const client = await runningDaemon(home);
    if (client === null) {
      refuseIfElsewhere(home, 'this clone');
      throw new CliError('DAEMON_NOT_RUNNING', `this clone follows a project of the Strata home ${home}, whose daemon is not running: start it with \`strata daemon\``, {
        exitCode: EXIT.unreachable,
      });
    }
    return { cwd, projectId, client, base };
  }
  return { cwd, projectId, client: ctx.client(), base };
}

/**
 * The project's snapshots after the local main, fast-forwarding main and the work tree, and the
 * project's tags (new ones, and ones moved, also on commits the clone already has).
 *
 * fast-import moves main before the work tree can follow, and the two-tree merge that follows refuses
 * to clobber local edits: when it refuses, main and the tags are put back as they were (compare-and-
 * swap) and the pull fails naming the files, so the clone never has a main ahead of its files (a
 * second pull said "up to date", and the next `git commit -am` reverted the upstream work).
 */
async function pullFromStrata(t: SyncTarget): Promise<{ projectId: string; head: string | null; updated: boolean; commits: number; tags: string[] }> {
  const before = await revParse(t.cwd, 'refs/heads/main');
  const refs = await t.client.json<GitRefs>('GET', `${t.base}/fs/git/refs`);
  let updated = false;
  let commits = 0;
  if (refs.head !== null && refs.head.commitId !== before) {
    const tagsBefore = await localTags(t.cwd);
    const response = await t.client.raw('GET', `${t.base}/fs/git/upload`, before === null ? {} : { query: { have: before } });
    await runGit(t.cwd, ['fast-import', '--quiet'], response.body);
    const after = await revParse(t.cwd, 'refs/heads/main');
    try {
      if (before === null) await runGit(t.cwd, ['checkout', '-q', '-f', 'main']);
      else await runGit(t.cwd, ['read-tree', '-m', '-u', before, 'main']);
    } catch (error) {
      await rollBack(t.cwd, before, after, tagsBefore);
      const paths = blockingPaths((error as Error).message);
      throw new CliError(
        'GIT_WORK_TREE_CONFLICT',
        `the pull changed nothing: local changes${paths.length > 0 ? ` to ${paths.map((p) => JSON.stringify(p)).join(', ')}` : ''} would be overwritten by the project's new snapshots; commit them (then pull, and push) or stash them, and pull again`,
        { exitCode: EXIT.conflict, details: { paths } },
      );
    }
    const range = before === null ? 'main' : `${before}..main`;
    commits = Number((await runGit(t.cwd, ['rev-list', '--count', range])).stdout.trim());
    updated = true;
  }
  const tags = await syncTags(t.cwd, refs.tags);
  return { projectId: t.projectId, head: refs.head === null ? before : await revParse(t.cwd, 'refs/heads/main'), updated: updated || tags.length > 0, commits, tags };
}

async function localTags(cwd: string): Promise<Map<string, string>> {
  const listed = (await runGit(cwd, ['for-each-ref', '--format=%(refname) %(objectname)', 'refs/tags'])).stdout;
  return new Map(listed.split('\n').filter(Boolean).map((line) => line.split(' ') as [string, string]));
}

/** Puts main and the tags back as they were before a fast-import whose work tree update failed. */
async function rollBack(cwd: string, before: string | null, after: string | null, tagsBefore: Map<string, string>): Promise<void> {
  if (before === null) await runGit(cwd, ['update-ref', '-d', 'refs/heads/main', ...(after === null ? [] : [after])]);
  else await runGit(cwd, ['update-ref', 'refs/heads/main', before, ...(after === null ? [] : [after])]);
  for (const [ref, id] of await localTags(cwd)) {
    const old = tagsBefore.get(ref);
    if (old === undefined) await runGit(cwd, ['update-ref', '-d', ref, id]);
    else if (old !== id) await runGit(cwd, ['update-ref', ref, old, id]);
  }
}

/** The files git named when it refused to update the work tree. */
function blockingPaths(message: string): string[] {
  const paths = new Set<string>();
  for (const match of message.matchAll(/Entry '([^']+)'/g)) paths.add(match[1]!);
  for (const match of message.matchAll(/^\t(.+)$/gm)) paths.add(match[1]!);
  return [...paths];
}

/** The project's tags onto the commits they name (when the clone has them); returns the tags set or moved. */
async function syncTags(cwd: string, tags: GitRefs['tags']): Promise<string[]> {
  const local = await localTags(cwd);
  const changed: string[] = [];
  for (const { tag, commitId } of tags) {
    const ref = `refs/tags/${tag}`;
    const current = local.get(ref);
    if (current === commitId || (await revParse(cwd, commitId)) === null) continue;
    await runGit(cwd, ['update-ref', ref, commitId, ...(current === undefined ? [''] : [current])]);
    changed.push(tag);
  }
  return changed;
}

/** The local commits of main the project lacks, as a fast-export stream to fs/git/receive. */
async function pushToStrata(t: SyncTarget): Promise<GitReceiveResult & { projectId: string }> {
  const [local, refs] = await Promise.all([revParse(t.cwd, 'refs/heads/main'), t.client.json<GitRefs>('GET', `${t.base}/fs/git/refs`)]);
  if (local === null) throw new CliError('USAGE', 'nothing to push: this repository has no main branch', { exitCode: EXIT.usage });
  const remote = refs.head?.commitId ?? null;
  if (remote === local) return { projectId: t.projectId, applied: [], alreadyPresent: 0, head: refs.head };
  if (remote !== null) {
    // Fast-forward only, checked here first for a clear message (the server checks again).
    const known = (await revParse(t.cwd, remote)) !== null;
    const ancestor = known && (await runGit(t.cwd, ['merge-base', '--is-ancestor', remote, local]).then(() => true, () => false));
    if (!ancestor) {
      throw new CliError('GIT_NOT_FAST_FORWARD', `the project has snapshots this repository lacks (its main is ${remote}): run \`strata git pull\` first`, { exitCode: EXIT.conflict });
    }
  }
  // --show-original-ids lets the server check it stores each commit so that it exports identically;
  // --reference-excluded-parents names the project's tip as the first commit's parent;
  // --use-done-feature ends the stream with `done`, so a git that dies midway sends a stream the
  // server rejects whole instead of a prefix it would apply.
  const range = remote === null ? ['main'] : ['main', `^${remote}`];
  const exported = exportStream(t.cwd, ['--use-done-feature', '--show-original-ids', '--reference-excluded-parents', '--signed-tags=strip', '--tag-of-filtered-object=drop', ...range]);
  const [result] = await Promise.all([t.client.json<GitReceiveResult>('POST', `${t.base}/fs/git/receive`, { body: exported.body }), exported.done]);
  return { projectId: t.projectId, ...result };
}

/** A project id as Strata makes them (a UUID): alone, it is more likely a forgotten DIR than a directory name. */
const PROJECT_ID_SHAPE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * `clone PROJECT DIR`, or `clone DIR` for the project of the current directory (--project,
 * STRATA_PROJECT_ID, as every command finds it): one argument is always DIR. A lone project id is
 * refused instead of being taken for a directory name (`git clone URL` habits).
 */
function cloneArguments(ctx: ReturnType<typeof contextFor>, first: string | undefined, second: string | undefined): { projectId: string; dirArg: string } {
  if (first === undefined) throw new CliError('USAGE', 'missing DIR: strata git clone [PROJECT] DIR', { exitCode: EXIT.usage });
  if (second !== undefined) return { projectId: first, dirArg: second };
  if (PROJECT_ID_SHAPE.test(first)) {
    throw new CliError('USAGE', `${first} looks like a project id: name the directory too (strata git clone ${first} DIR), or pass only DIR to clone the current project`, {
      exitCode: EXIT.usage,
      details: { project: first },
    });
  }
  return { projectId: ctx.projectId(), dirArg: first };
}

/**
 * DIR must be missing or empty (TARGET_NOT_EMPTY, as `strata checkout --to`), and outside any
 * project's directory (TARGET_IN_PROJECT): its daemon would version the clone's files into the project.
 */
async function checkCloneTarget(dir: string): Promise<void> {
  await refuseInsideProject(dir);
  const info = await stat(dir).catch((error: NodeJS.ErrnoException) => (error.code === 'ENOENT' ? null : Promise.reject(error)));
  if (info === null) return;
  if (!info.isDirectory()) throw new CliError('LOCAL_IO_ERROR', `${dir} is not a directory`, { exitCode: EXIT.conflict, details: { path: dir } });
  if ((await readdir(dir)).length > 0) throw new CliError('TARGET_NOT_EMPTY', `${dir} is not empty: choose a new or empty directory`, { exitCode: EXIT.conflict, details: { path: dir } });
}

/**
 * Makes DIR if missing; `undo` takes back what the clone made: the directories it created, or
 * everything in the directory that was empty when the clone began.
 */
async function makeCloneDir(dir: string): Promise<{ undo(): Promise<void> }> {
  const created = await mkdir(dir, { recursive: true });
  return {
    async undo() {
      if (created !== undefined) await rm(created, { recursive: true, force: true });
      else for (const name of await readdir(dir)) await rm(join(dir, name), { recursive: true, force: true });
    },
  };
}

export function registerGitCommands(program: Command): void {
  const git = program.command('git').description("the project's snapshots as a git repository (one commit per snapshot), through the git binary");

  git
    .command('clone')
    .description(
      'create DIR as a git repository of PROJECT (default: the project of the current directory, else --project or STRATA_PROJECT_ID): every snapshot a commit on main, tags as tags',
    )
    .usage('[options] [project] <dir>')
    .argument('[project]', 'project id (with DIR; alone, the argument is DIR)')
    .argument('[dir]', 'a new (or empty) directory, outside the project directory')
    .action(async (first: string | undefined, second: string | undefined, _options: unknown, command: Command) => {
      const ctx = contextFor(command);
      const { projectId, dirArg } = cloneArguments(ctx, first, second);
      const dir = resolve(dirArg);
      const client = ctx.client();
      const base = `/v1/projects/${encodeURIComponent(projectId)}`;
      await checkCloneTarget(dir);
      // The project is asked for before anything is made on disk: an unknown project (or key, or
      // server) leaves DIR as it was, and a retry with the right one is not refused as "not empty".
      const response = await client.raw('GET', `${base}/fs/git/upload`);
      const made = await makeCloneDir(dir).catch((error: unknown) => {
        response.body.destroy();
        throw error;
      });
      let head: string | null;
      try {
        await runGit(dir, ['init', '-q', '-b', 'main']);
        await runGit(dir, ['fast-import', '--quiet'], response.body);
        head = await revParse(dir, 'refs/heads/main');
        if (head !== null) await runGit(dir, ['checkout', '-q', '-f', 'main']);
        await runGit(dir, ['config', 'strata.project', projectId]);
        await runGit(dir, ['config', 'strata.server', client.serverUrl]);
        // Made through the daemon found from the working directory: remember its home (syncTarget).
        const local = ctx.flags.server === undefined && ctx.flags.apiKey === undefined ? discoverProject() : null;
        if (local !== null && local.daemon !== null && local.daemon.serverUrl === client.serverUrl) await runGit(dir, ['config', 'strata.home', local.home]);
      } catch (error) {
        // A stream cut short, a git that failed: no half-made repository stays behind.
        response.body.destroy();
        await made.undo();
        throw error;
      }
      const commits = head === null ? 0 : Number((await runGit(dir, ['rev-list', '--count', 'main'])).stdout.trim());
      ctx.output.result({ projectId, dir, head, commits }, () => ctx.output.line(`cloned ${projectId} into ${dir}: ${commits} commit(s), main at ${head ?? '(empty)'}`));
    });

  git
    .command('pull')
    .description("bring the project's new snapshots into this clone (only what follows main); with REMOTE, bring REMOTE's new commits of main into the project instead (git fetch + fast-forward, then push)")
    .argument('[remote]', 'an ordinary git remote of this repository (e.g. origin)')
    .action(async (remote: string | undefined, _options: unknown, command: Command) => {
      const ctx = contextFor(command);
      const cwd = process.cwd();
      const sync = await syncTarget(ctx, cwd);
      if (remote === undefined) {
        const pulled = await pullFromStrata(sync);
        ctx.output.result(pulled, () =>
          ctx.output.line(
            pulled.updated
              ? `pulled ${pulled.commits} commit(s): main at ${pulled.head}${pulled.tags.length > 0 ? `; tags ${pulled.tags.join(', ')}` : ''}`
              : 'already up to date',
          ),
        );
        return;
      }
      // The project first (so a fast-forward from REMOTE lands on top of it), then REMOTE, then the project.
      const fromStrata = await pullFromStrata(sync);
      await runGit(cwd, ['fetch', '-q', remote, 'main']);
      await runGit(cwd, ['merge', '-q', '--ff-only', 'FETCH_HEAD']);
      const pushed = await pushToStrata(sync);
      ctx.output.result({ remote, fromProject: fromStrata, toProject: pushed }, () =>
        ctx.output.line(`${remote} → project: ${pushed.applied.length} new snapshot(s); project at ${pushed.head?.commitId ?? '(empty)'}`),
      );
    });

  git
    .command('push')
    .description('send the commits of main the project lacks (only those), each becoming a snapshot; with REMOTE, publish the project to REMOTE instead (pull from the project, then git push main and tags)')
    .argument('[remote]', 'an ordinary git remote of this repository (e.g. origin)')
    .action(async (remote: string | undefined, _options: unknown, command: Command) => {
      const ctx = contextFor(command);
      const cwd = process.cwd();
      const sync = await syncTarget(ctx, cwd);
      if (remote === undefined) {
        const result = await pushToStrata(sync);
        ctx.output.result(result, () =>
          ctx.output.line(`pushed ${result.applied.length} commit(s)${result.alreadyPresent > 0 ? ` (${result.alreadyPresent} already there)` : ''}: project at ${result.head?.commitId ?? '(empty)'}`),
        );
        return;
      }
      const pulled = await pullFromStrata(sync);
      const pushed = await pushToStrata(sync);
      // git push sends only what REMOTE lacks.
      await runGit(cwd, ['push', '-q', remote, 'refs/heads/main:refs/heads/main', 'refs/tags/*:refs/tags/*']);
      const head = await revParse(cwd, 'refs/heads/main');
      ctx.output.result({ remote, head, fromProject: pulled, toProject: pushed }, () => ctx.output.line(`published main at ${head} to ${remote}`));
    });
}
