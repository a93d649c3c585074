import type { DirectoryListing } from '../engine-api.js';
import type { EngineContext } from '../context.js';
import { StrataError } from '../errors.js';
import { normalizeDirectoryPath } from '../paths.js';
import type { Entry, Page } from '../types.js';
import { clampLimit } from './history.js';

const PAGE = 5000;

/**
 * Immediate children of a directory: files with their current version, and subdirectories; with `at`,
 * as they were at that time (each path's newest version by then, repository entriesAt).
 */
export async function listDirectory(ctx: EngineContext, input: { projectId: string; path: string; at?: string }): Promise<DirectoryListing> {
  const dir = normalizeDirectoryPath(input.path ?? '');
  await ctx.requireProject(input.projectId);
  const prefix = dir === '' ? '' : `${dir}/`;
  const items: DirectoryListing['items'] = [];
  const seenDirs = new Set<string>();
  let cursor: string | undefined;
  do {
    const options = { prefix, limit: PAGE, ...(cursor ? { cursor } : {}) };
    const page = input.at === undefined ? await ctx.repository.versions.listEntries(input.projectId, options) : await ctx.repository.versions.entriesAt(input.projectId, { ...options, at: input.at });
    for (const entry of page.items) {
      const rest = entry.path.slice(prefix.length);
      const slash = rest.indexOf('/');
      if (slash === -1) {
        items.push({ name: rest, path: entry.path, type: 'file', size: entry.size, versionId: entry.versionId, timestamp: entry.timestamp, symlink: entry.symlink });
      } else {
        const name = rest.slice(0, slash);
        if (!seenDirs.has(name)) {
          seenDirs.add(name);
          items.push({ name, path: prefix + name, type: 'directory' });
        }
      }
    }
    cursor = page.nextCursor;
  } while (cursor);
  if (dir !== '' && items.length === 0 && input.at !== undefined) {
    throw new StrataError('PATH_NOT_FOUND', { message: `Nothing was at ${dir} at ${input.at}`, details: { path: dir, field: 'path', at: input.at } });
  }
  if (dir !== '' && items.length === 0) {
    const file = await ctx.repository.versions.getEntry(input.projectId, dir);
    throw new StrataError(file ? 'INVALID_ARGUMENT' : 'PATH_NOT_FOUND', {
      ...(file ? { message: 'The path is a file, not a directory' } : {}),
      details: { path: dir, field: 'path' },
    });
  }
  items.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return { path: dir, items };
}

/** Files below a directory ('' = the whole project), in path order, a page at a time. */
export async function listFiles(ctx: EngineContext, input: { projectId: string; prefix?: string; cursor?: string; limit?: number }): Promise<Page<Entry>> {
  const dir = normalizeDirectoryPath(input.prefix ?? '');
  await ctx.requireProject(input.projectId);
  return ctx.repository.versions.listEntries(input.projectId, {
    prefix: dir === '' ? '' : `${dir}/`,
    limit: clampLimit(input.limit),
    ...(input.cursor !== undefined ? { cursor: input.cursor } : {}),
  });
}
