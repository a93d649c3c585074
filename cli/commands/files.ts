import type { Command } from 'commander';
import { historyNotKept } from './policy.js';
import type { DirectoryListing, WriteResult } from '../../engine/engine-api.js';
import { isUuid } from '../../engine/ids.js';
import type { VersionRecord } from '../../engine/types.js';
import { type CommandContext, contextFor } from '../context.js';
import { CliError } from '../errors.js';
import { formatBytes, formatTime, sanitizeLine } from '../output.js';
import { openUploadSource, pipeToStdout, readAll } from '../transfer.js';

export function registerFileCommands(program: Command): void {
  program
    .command('put')
    .description('upload a file (or stdin with -) to PATH in the project, creating a new version')
    .argument('<localFile>', "local file, or '-' for stdin")
    .argument('<path>', 'project path, e.g. analysis/fit.m')
    .option('--base-version <versionId>', "only write if PATH's current version is this one ('' = PATH must not exist)")
    .option('--executable', 'record the new version as executable (default: the local file\'s exec bit)')
    .option('--symlink', 'record a symbolic link whose target is read from stdin (-); a local link is always sent as a link')
    .action(async (localFile: string, pathArg: string, options: { baseVersion?: string; executable?: boolean; symlink?: boolean }, command: Command) => {
      const ctx = contextFor(command);
      const path = ctx.filePath(pathArg);
      const client = ctx.client();
      const projectPath = ctx.projectPath('/fs/write');
      // resolved before the upload starts: a refusal then never cuts an upload short
      const baseVersion = await wholeVersionId(ctx, options.baseVersion);
      const source = await openUploadSource(localFile, `put ${path}`, options.executable === true, options.symlink === true);
      let result: WriteResult;
      try {
        result = await client.json<WriteResult>('PUT', projectPath, {
          query: { path, baseVersionId: baseVersion, executable: source.executable || undefined, symlink: source.symlink || undefined },
          body: source.body,
          // A known length lets the server refuse an oversized file before we send it.
          ...(source.size === undefined ? {} : { headers: { 'content-length': String(source.size) } }),
        });
      } catch (error) {
        if (error instanceof CliError && error.code === 'UPLOAD_INTERRUPTED') throw await explainInterruptedUpload(ctx, path, error);
        throw error;
      } finally {
        source.finish();
      }
      if (result.historyKept === false) ctx.output.warn(historyNotKept(result.version.path, result.version.size));
      ctx.output.result(result, () => {
        const kind = result.version.symlink ? 'link' : formatBytes(result.version.size);
        ctx.output.line(`${sanitizeLine(result.version.path)}  ${kind}  version ${result.version.versionId}`);
      });
    });

  program
    .command('cat')
    .description('write the content of PATH (or one of its versions) to stdout')
    .argument('<path>', 'project path')
    .option('--version <versionId>', 'a version of PATH from `strata history`')
    .action(async (pathArg: string, options: { version?: string }, command: Command) => {
      const ctx = contextFor(command);
      const path = ctx.filePath(pathArg);
      const response = await ctx.client().raw('GET', ctx.projectPath('/fs/read'), {
        query: { path, versionId: options.version },
        headers: { accept: '*/*' },
      });
      if (!ctx.output.json) {
        await pipeToStdout(response.body);
        return;
      }
      // --json must be one document: the bytes inline, as text when they are UTF-8, else base64.
      const bytes = await readAll(response.body);
      const text = new TextDecoder('utf-8', { fatal: false }).decode(bytes);
      const isText = Buffer.from(text, 'utf8').equals(bytes);
      ctx.output.result(
        {
          path,
          versionId: response.headers.get('x-strata-version-id'),
          contentHash: response.headers.get('x-strata-content-hash'),
          // a link's content is its target
          symlink: response.headers.get('x-strata-symlink') === 'true',
          size: bytes.byteLength,
          encoding: isText ? 'utf8' : 'base64',
          content: isText ? text : bytes.toString('base64'),
        },
        () => {},
      );
    });

  program
    .command('ls')
    .description('list a directory of the project (default: the root)')
    .argument('[dir]', 'directory (default: here in a project directory, else the root)', '')
    .action(async (dirArg: string, _options: unknown, command: Command) => {
      const ctx = contextFor(command);
      const dir = ctx.filePath(dirArg);
      const listing = await ctx.client().json<DirectoryListing>('GET', ctx.projectPath('/fs/dir'), { query: { path: dir } });
      // A link shows as `name -> target` (its content is the target: one small read per link).
      const targets = new Map<string, string>();
      if (!ctx.output.json) {
        for (const item of listing.items) if (item.symlink === true && item.versionId !== undefined) targets.set(item.path, await linkTarget(ctx, item.versionId));
      }
      ctx.output.result(listing, () => {
        if (listing.items.length === 0) {
          ctx.output.hint(`${listing.path || '/'} is empty`);
          return;
        }
        ctx.output.table(
          ['SIZE', 'MODIFIED', 'NAME'],
          listing.items.map((item) => [
            item.type === 'directory' ? '-' : formatBytes(item.size ?? 0),
            formatTime(item.timestamp),
            item.type === 'directory' ? `${item.name}/` : targets.has(item.path) ? `${item.name} -> ${sanitizeLine(targets.get(item.path)!)}` : item.name,
          ]),
          { rightAlign: [0] },
        );
      });
    });

  program
    .command('rm')
    .description('delete PATH (history keeps it: `strata history PATH`, then `strata restore`)')
    .argument('<path>', 'project path')
    .option('--base-version <versionId>', "only delete if PATH's current version is this one")
    .action(async (pathArg: string, options: { baseVersion?: string }, command: Command) => {
      const ctx = contextFor(command);
      const path = ctx.filePath(pathArg);
      const body: Record<string, string> = { path };
      const baseVersion = await wholeVersionId(ctx, options.baseVersion);
      if (baseVersion !== undefined) body['baseVersionId'] = baseVersion;
      const result = await ctx.client().json<{ version: VersionRecord }>('POST', ctx.projectPath('/fs/delete'), { json: body });
      ctx.output.result(result, () => {
        ctx.output.line(`deleted ${sanitizeLine(result.version.path)} (tombstone ${result.version.versionId})`);
      });
    });

  program
    .command('mv')
    .description('rename a file; both paths keep their history')
    .argument('<from>', 'current project path')
    .argument('<to>', 'new project path')
    .option('--overwrite', 'replace a file that already exists at TO')
    .action(async (fromArg: string, toArg: string, options: { overwrite?: boolean }, command: Command) => {
      const ctx = contextFor(command);
      const from = ctx.filePath(fromArg);
      const to = ctx.filePath(toArg);
      const result = await ctx
        .client()
        .json<{ deleted: VersionRecord; created: WriteResult }>('POST', ctx.projectPath('/fs/rename'), {
          json: { from, to, overwrite: options.overwrite === true },
        });
      ctx.output.result(result, () => {
        ctx.output.line(
          `${sanitizeLine(result.deleted.path)} -> ${sanitizeLine(result.created.version.path)}  version ${result.created.version.versionId}`,
        );
      });
    });
}

/**
 * A --base-version as the whole id the server compares: a short id (the table's last 10 digits, a
 * prefix) is resolved by the server first (VERSION_NOT_FOUND, AMBIGUOUS_ID). A whole id and '' (the
 * path must not exist) pass as they are — the precondition is the server's to check.
 */
async function wholeVersionId(ctx: CommandContext, text: string | undefined): Promise<string | undefined> {
  if (text === undefined || text === '' || isUuid(text)) return text;
  return (await ctx.client().json<VersionRecord>('GET', ctx.projectPath(`/history/${encodeURIComponent(text)}`))).versionId;
}

/** A link version's target, as text for a listing. */
async function linkTarget(ctx: CommandContext, versionId: string): Promise<string> {
  const response = await ctx.client().raw('GET', ctx.projectPath('/fs/read'), { query: { versionId }, headers: { accept: '*/*' } });
  return (await readAll(response.body)).toString('utf8');
}

/**
 * The server rejected an upload before reading it and closed the connection, taking its answer
 * with it (see client.ts). Ask again without a body: a read of the same path fails the same way
 * for a bad credential, project or path. If it does not fail, the write itself was refused
 * (no write permission, or the file exceeds the server's upload limit).
 */
async function explainInterruptedUpload(ctx: CommandContext, path: string, interrupted: CliError): Promise<CliError> {
  try {
    await ctx.client().json('GET', ctx.projectPath('/fs/stat'), { query: { path } });
  } catch (probe) {
    if (probe instanceof CliError && probe.status !== undefined && probe.code !== 'PATH_NOT_FOUND') return probe;
  }
  return new CliError(
    interrupted.code,
    `${interrupted.message}: the server refused the upload (no write access, or larger than its upload limit?)`,
    { exitCode: interrupted.exitCode, ...(interrupted.details ? { details: interrupted.details } : {}), cause: interrupted },
  );
}
