// `strata checkout SNAPSHOT|VERSION --to DIR`: a snapshot's tree, or one file version, written into a
// directory of the user's, without touching the project (nothing is recorded; the project's files
// and history stay as they are). The reference is resolved by the server (short ids, numbers and
// tags: engine/commands/resolve-ids.ts); the bytes stream through checkout-writer.ts.

import { mkdir, readdir, stat } from 'node:fs/promises';
import { resolve } from 'node:path';
import type { Command } from 'commander';
import { shortId } from '../../engine/short-ids.js';
import type { Page, Snapshot, SnapshotEntry, VersionRecord } from '../../engine/types.js';
import { createCheckoutWriter } from '../checkout-writer.js';
import { type CommandContext, contextFor } from '../context.js';
import { CliError, EXIT } from '../errors.js';
import { refuseInsideProject } from '../target-dir.js';
import { formatBytes, plural, sanitizeLine } from '../output.js';
import { createProgress } from '../progress.js';

const PAGE = 1000;

type Target = { kind: 'snapshot'; snapshot: Snapshot } | { kind: 'version'; version: VersionRecord };

export function registerCheckoutCommand(program: Command): void {
  program
    .command('checkout')
    .alias('export')
    .description("write a snapshot's files, or one version of a file, into DIR (the project is not touched)")
    .argument('<ref>', 'snapshot (id, tag, number or short id) or version id (or short id)')
    .requiredOption('--to <dir>', 'directory to write into (made if missing; must be empty unless --force)')
    .option('--force', 'write into a non-empty DIR, replacing files at the same paths')
    .action(async (ref: string, options: { to: string; force?: boolean }, command: Command) => {
      const ctx = contextFor(command);
      const root = resolve(options.to);
      const target = await resolveTarget(ctx, ref);
      await prepareDirectory(root, options.force === true);
      const total = target.kind === 'snapshot' ? target.snapshot.totalSize : target.version.size;
      const progress = createProgress(`checkout ${ref}`, total, !ctx.output.json);
      const writer = createCheckoutWriter({
        client: ctx.client(),
        projectPath: (suffix) => ctx.projectPath(suffix),
        root,
        force: options.force === true,
        onBytes: (bytes) => progress.add(bytes),
      });
      try {
        if (target.kind === 'version') {
          await writer.write(target.version);
        } else {
          // a page of entries at a time: a tree of a million paths is never listed whole
          let cursor: string | undefined;
          do {
            const page: Page<SnapshotEntry> = await ctx.client().json('GET', ctx.projectPath(`/fs/snapshots/${encodeURIComponent(target.snapshot.snapshotId)}/entries`), {
              query: { limit: PAGE, cursor },
            });
            for (const entry of page.items) await writer.write(entry);
            cursor = page.nextCursor;
          } while (cursor !== undefined);
        }
      } finally {
        progress.done();
      }
      const totals = await writer.finish();
      const summary =
        target.kind === 'snapshot'
          ? { snapshotId: target.snapshot.snapshotId, seq: target.snapshot.seq, dir: root, ...totals }
          : { versionId: target.version.versionId, path: target.version.path, dir: root, ...totals };
      ctx.output.result(summary, () => {
        const what =
          target.kind === 'snapshot'
            ? `snapshot ${target.snapshot.seq} (${shortId(target.snapshot.snapshotId)})`
            : `${sanitizeLine(target.version.path)} version ${shortId(target.version.versionId)}`;
        const linkText = totals.links > 0 ? `, ${plural(totals.links, 'link')}` : '';
        ctx.output.line(`checked out ${what} into ${root}: ${plural(totals.files, 'file')}${linkText}, ${formatBytes(totals.bytes)}`);
      });
    });
}

/** A snapshot or a version: the server is asked for both; a reference that names one of each is ambiguous. */
async function resolveTarget(ctx: CommandContext, ref: string): Promise<Target> {
  const client = ctx.client();
  const missing = (codes: string[]) => (error: unknown) => {
    if (error instanceof CliError && codes.includes(error.code)) return null;
    throw error;
  };
  const [snapshot, version] = await Promise.all([
    client.json<Snapshot>('GET', ctx.projectPath(`/fs/snapshots/${encodeURIComponent(ref)}`)).catch(missing(['SNAPSHOT_NOT_FOUND'])),
    client.json<VersionRecord>('GET', ctx.projectPath(`/history/${encodeURIComponent(ref)}`)).catch(missing(['VERSION_NOT_FOUND', 'NOT_FOUND'])),
  ]);
  if (snapshot !== null && version !== null) {
    throw new CliError('AMBIGUOUS_ID', `'${ref}' names snapshot ${snapshot.seq} (${shortId(snapshot.snapshotId)}) and a version of ${sanitizeLine(version.path)} (${shortId(version.versionId)}); give more digits`, {
      exitCode: EXIT.badInput,
      details: { id: ref, candidates: [snapshot.snapshotId, version.versionId] },
    });
  }
  if (snapshot !== null) return { kind: 'snapshot', snapshot };
  if (version !== null) {
    if (version.contentHash === null) {
      throw new CliError('VERSION_IS_TOMBSTONE', `version ${shortId(version.versionId)} of ${sanitizeLine(version.path)} is a deletion: it has no content`, {
        exitCode: EXIT.conflict,
        details: { versionId: version.versionId, path: version.path },
      });
    }
    return { kind: 'version', version };
  }
  throw new CliError('NOT_FOUND', `no snapshot or version '${ref}' in this project`, { exitCode: EXIT.notFound, details: { id: ref } });
}

/**
 * DIR is made if missing; a non-empty one needs --force; a file there is refused, and so is a DIR in a
 * project's directory: its daemon would record the checked-out files as new versions of the project.
 */
async function prepareDirectory(root: string, force: boolean): Promise<void> {
  await refuseInsideProject(root);
  const info = await stat(root).catch((error: NodeJS.ErrnoException) => (error.code === 'ENOENT' ? null : Promise.reject(error)));
  if (info === null) {
    await mkdir(root, { recursive: true });
    return;
  }
  if (!info.isDirectory()) throw new CliError('LOCAL_IO_ERROR', `${root} is not a directory`, { exitCode: EXIT.conflict, details: { path: root } });
  if (!force && (await readdir(root)).length > 0) {
    throw new CliError('TARGET_NOT_EMPTY', `${root} is not empty: choose an empty directory, or --force to write into it (files at the same paths are replaced)`, {
      exitCode: EXIT.conflict,
      details: { path: root },
    });
  }
}

