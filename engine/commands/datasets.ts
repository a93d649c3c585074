// Dataset operations: rules (track, untrack, threshold), the manifest of a version, the manifest
// history of a path, and the datasets of the current tree.
import type { EngineContext } from '../context.js';
import type { DatasetInfo, DatasetVersionInfo } from '../engine-api.js';
import { loadManifest } from '../datasets/read-dataset.js';
import { isTracked, validateThreshold, validateTrackPattern, withoutTracked, withTracked } from '../datasets/rules.js';
import { storeDatasetFromObject } from '../datasets/store-dataset.js';
import { StrataError } from '../errors.js';
import { normalizeProjectPath } from '../paths.js';
import type { Actor, DatasetRules, Entry, Page, VersionRecord } from '../types.js';
import { findVersion } from './resolve-ids.js';
import { commitOne } from './write-file.js';

const PAGE = 1000;

export async function getDatasetRules(ctx: EngineContext, projectId: string): Promise<DatasetRules> {
  return (await ctx.requireProject(projectId)).datasets;
}

export async function setDatasetThreshold(ctx: EngineContext, input: { projectId: string; thresholdBytes: number }): Promise<DatasetRules> {
  const project = await ctx.requireProject(input.projectId);
  const datasets = { ...project.datasets, thresholdBytes: validateThreshold(input.thresholdBytes) };
  return (await ctx.repository.projects.update(project.projectId, { datasets })).datasets;
}

/**
 * Adds a tracked pattern. Files of the current tree it matches become datasets at once (a new
 * version with the same bytes, now as shards and a manifest), so `dataset show` works right away.
 */
export async function trackDataset(ctx: EngineContext, input: { projectId: string; pattern: string; actor: Actor }): Promise<{ rules: DatasetRules; converted: VersionRecord[] }> {
  const pattern = validateTrackPattern(input.pattern);
  const project = await ctx.requireProject(input.projectId);
  const rules = (await ctx.repository.projects.update(project.projectId, { datasets: withTracked(project.datasets, pattern) })).datasets;
  const single = { ...rules, tracked: [pattern] };
  const converted: VersionRecord[] = [];
  for await (const entry of allEntries(ctx, project.projectId)) {
    // A link stays a link: its content is a target, never a dataset's bytes.
    if (entry.dataset || entry.symlink || !isTracked(single, entry.path)) continue;
    converted.push(await convertEntry(ctx, project.projectId, entry, input.actor));
  }
  return { rules, converted };
}

/** Removes a tracked pattern. Existing dataset versions stay datasets; later writes follow the rules. */
export async function untrackDataset(ctx: EngineContext, input: { projectId: string; pattern: string }): Promise<DatasetRules> {
  const pattern = validateTrackPattern(input.pattern);
  const project = await ctx.requireProject(input.projectId);
  if (!project.datasets.tracked.includes(pattern)) {
    throw new StrataError('INVALID_ARGUMENT', { message: `'${pattern}' is not tracked`, details: { field: 'pattern', tracked: project.datasets.tracked } });
  }
  return (await ctx.repository.projects.update(project.projectId, { datasets: withoutTracked(project.datasets, pattern) })).datasets;
}

async function convertEntry(ctx: EngineContext, projectId: string, entry: Entry, actor: Actor): Promise<VersionRecord> {
  return ctx.gcLock.shared(async () => {
    const dataset = await storeDatasetFromObject(ctx, entry.contentHash, entry.size);
    const record = ctx.newVersion({ projectId, path: entry.path, contentHash: dataset.manifestHash, size: dataset.size, actor, kind: 'write', executable: entry.executable, dataset: true });
    // Only if nobody wrote the path meanwhile; a concurrent write wins and follows the rules itself.
    return (await commitOne(ctx, { record, shards: dataset.shards, expectedCurrent: entry.versionId })).version;
  });
}

async function* allEntries(ctx: EngineContext, projectId: string): AsyncGenerator<Entry> {
  let cursor: string | undefined;
  do {
    const page: Page<Entry> = await ctx.repository.versions.listEntries(projectId, { prefix: '', limit: PAGE, ...(cursor === undefined ? {} : { cursor }) });
    yield* page.items;
    cursor = page.nextCursor;
  } while (cursor !== undefined);
}

/** The datasets of the current tree (path order). */
export async function listDatasets(ctx: EngineContext, projectId: string): Promise<Entry[]> {
  await ctx.requireProject(projectId);
  const found: Entry[] = [];
  for await (const entry of allEntries(ctx, projectId)) if (entry.dataset) found.push(entry);
  return found;
}

/** A dataset's manifest: the current one of `path`, or that of one version. */
export async function getDatasetManifest(ctx: EngineContext, input: { projectId: string; path?: string; versionId?: string }): Promise<DatasetInfo> {
  await ctx.requireProject(input.projectId);
  const path = input.path === undefined ? undefined : normalizeProjectPath(input.path);
  let version: VersionRecord | null;
  if (input.versionId !== undefined) {
    version = await findVersion(ctx, input.projectId, input.versionId);
    if (!version || (path !== undefined && version.path !== path)) throw new StrataError('VERSION_NOT_FOUND', { details: { versionId: input.versionId } });
  } else {
    if (path === undefined) throw new StrataError('INVALID_ARGUMENT', { message: 'path or versionId is required', details: { field: 'path' } });
    const entry = await ctx.repository.versions.getEntry(input.projectId, path);
    if (!entry) throw new StrataError('PATH_NOT_FOUND', { details: { path } });
    version = await ctx.repository.versions.get(input.projectId, entry.versionId);
    if (!version) throw new StrataError('PATH_NOT_FOUND', { details: { path } });
  }
  if (!version.dataset || version.contentHash === null) throw new StrataError('NOT_A_DATASET', { details: { path: version.path, versionId: version.versionId } });
  return { version, manifestHash: version.contentHash, manifest: await loadManifest(ctx, version.contentHash) };
}

/**
 * The manifest history of a path, newest first, with shard counts and sizes; versions stored as
 * plain files (before the path became a dataset) and deletions are listed with `manifest: null`.
 */
export async function datasetHistory(ctx: EngineContext, input: { projectId: string; path: string; cursor?: string; limit?: number }): Promise<Page<DatasetVersionInfo>> {
  await ctx.requireProject(input.projectId);
  const path = normalizeProjectPath(input.path);
  const page = await ctx.repository.versions.history(input.projectId, { path, limit: input.limit ?? 100, ...(input.cursor === undefined ? {} : { cursor: input.cursor }) });
  const items: DatasetVersionInfo[] = [];
  let previous: Set<string> | null = null;
  for (const version of [...page.items].reverse()) {
    if (!version.dataset || version.contentHash === null) {
      items.push({ version, shardCount: null, distinctShards: null, newShards: null, newBytes: null });
      continue;
    }
    const manifest = await loadManifest(ctx, version.contentHash);
    const sizes = new Map(manifest.shards.map((s) => [s.hash, s.size]));
    const distinct = new Set(sizes.keys());
    const added = previous === null ? null : [...distinct].filter((h) => !previous!.has(h));
    const newBytes = added === null ? null : added.reduce((sum, h) => sum + sizes.get(h)!, 0);
    items.push({ version, shardCount: manifest.shards.length, distinctShards: distinct.size, newShards: added === null ? null : added.length, newBytes });
    previous = distinct;
  }
  items.reverse();
  return page.nextCursor === undefined ? { items } : { items, nextCursor: page.nextCursor };
}
