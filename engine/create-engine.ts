import { writeVersionFile } from './commands/write-version-file.js';
import { deleteFile } from './commands/delete-file.js';
import { fsck } from './commands/fsck.js';
import { gc } from './commands/gc.js';
import { getVersion, history, renameOf } from './commands/history.js';
import { countFiles } from './commands/count-files.js';
import { listDirectory, listFiles } from './commands/list-directory.js';
import { datasetHistory, getDatasetManifest, getDatasetRules, listDatasets, setDatasetThreshold, trackDataset, untrackDataset } from './commands/datasets.js';
import { gitExport } from './commands/git-export.js';
import { gitReceive } from './commands/git-receive.js';
import { gitRefs, gitUpload } from './commands/git-refs.js';
import { createProject, updatePolicy } from './commands/projects.js';
import { readFile } from './commands/read-file.js';
import { renameFile, renameFiles } from './commands/rename-file.js';
import { restoreSnapshot } from './commands/restore-snapshot.js';
import { restoreVersion } from './commands/restore-version.js';
import { diffVersions } from './commands/diff-versions.js';
import { getRetention, previewRetention, setRetention } from './commands/retention.js';
import { createSnapshot, diffSnapshots, getSnapshot, listSnapshots, snapshotEntries } from './commands/snapshots.js';
import { adoptSyncedVersions, feedPosition, syncKnownVersions, syncOutbox, syncOutboxStats } from './commands/sync-adopt.js';
import { syncChanges } from './commands/sync-feed.js';
import { recordSyncedSnapshot, snapshotFeed } from './commands/sync-snapshots.js';
import { composeObjects, missingObjects, objectsToRead, openObject, putDatasetContent, putObject, putObjects } from './commands/sync-objects.js';
import { applySyncedVersions } from './commands/sync-versions.js';
import { addTag, listTags, removeTag } from './commands/tags.js';
import { writeFile } from './commands/write-file.js';
import { createEngineContext } from './context.js';
import type { Engine, EngineDeps } from './engine-api.js';
import { normalizeProjectPath } from './paths.js';

/** The engine: a thin table from operations to commands, all sharing one context. */
export function createEngine(deps: EngineDeps): Engine {
  const ctx = createEngineContext(deps);
  let closed = false;
  const listeners = new Set<(projectId: string) => void>();
  /** `result`, telling the listeners once it settled (a failed batch may have committed a part). */
  const changing = <T>(projectId: string, result: Promise<T>): Promise<T> =>
    result.finally(() => {
      for (const listener of listeners) listener(projectId);
    });
  return {
    createProject: (input) => createProject(ctx, input),
    getProject: (projectId) => ctx.requireProject(projectId),
    listProjects: (orgId) => ctx.repository.projects.list(orgId),
    writeFile: (input) => changing(input.projectId, writeFile(ctx, input)),
    readFile: (input) => readFile(ctx, input),
    writeVersionFile: (input) => writeVersionFile(ctx, input),
    deleteFile: (input) => changing(input.projectId, deleteFile(ctx, input)),
    renameFile: (input) => changing(input.projectId, renameFile(ctx, input)),
    renameFiles: (input) => changing(input.projectId, renameFiles(ctx, input)),
    listDirectory: (input) => listDirectory(ctx, input),
    listFiles: (input) => listFiles(ctx, input),
    countFiles: (projectId) => countFiles(ctx, projectId),
    async stat(input) {
      await ctx.requireProject(input.projectId);
      return ctx.repository.versions.getEntry(input.projectId, normalizeProjectPath(input.path));
    },
    history: (input) => history(ctx, input),
    getVersion: (projectId, versionId) => getVersion(ctx, projectId, versionId),
    renameOf: (projectId, versionId) => renameOf(ctx, projectId, versionId),
    restoreVersion: (input) => changing(input.projectId, restoreVersion(ctx, input)),
    diffVersions: (input) => diffVersions(ctx, input),
    // Told too: a linked workstation sends a new snapshot at once, and a server wakes the long polls.
    createSnapshot: (input) => changing(input.projectId, createSnapshot(ctx, input)),
    listSnapshots: (input) => listSnapshots(ctx, input),
    getSnapshot: (projectId, idOrTag) => getSnapshot(ctx, projectId, idOrTag),
    snapshotEntries: (input) => snapshotEntries(ctx, input),
    diffSnapshots: (input) => diffSnapshots(ctx, input),
    restoreSnapshot: (input) => changing(input.projectId, restoreSnapshot(ctx, input)),
    addTag: (input) => changing(input.projectId, addTag(ctx, input)),
    listTags: (projectId) => listTags(ctx, projectId),
    removeTag: (input) => changing(input.projectId, removeTag(ctx, input)),
    getRetention: (projectId) => getRetention(ctx, projectId),
    setRetention: (input) => changing(input.projectId, setRetention(ctx, input)),
    previewRetention: (input) => previewRetention(ctx, input),
    updatePolicy: (input) => updatePolicy(ctx, input),
    gitExport: (input) => gitExport(ctx, input),
    gitRefs: (projectId) => gitRefs(ctx, projectId),
    gitUpload: (input) => gitUpload(ctx, input),
    gitReceive: (input) => changing(input.projectId, gitReceive(ctx, input)),
    getDatasetRules: (projectId) => getDatasetRules(ctx, projectId),
    trackDataset: (input) => changing(input.projectId, trackDataset(ctx, input)),
    untrackDataset: (input) => untrackDataset(ctx, input),
    setDatasetThreshold: (input) => setDatasetThreshold(ctx, input),
    listDatasets: (projectId) => listDatasets(ctx, projectId),
    getDatasetManifest: (input) => getDatasetManifest(ctx, input),
    datasetHistory: (input) => datasetHistory(ctx, input),
    missingObjects: (input) => missingObjects(ctx, input),
    putObject: (input) => putObject(ctx, input),
    putObjects: (input) => putObjects(ctx, input),
    openObject: (input) => openObject(ctx, input),
    objectsToRead: (input) => objectsToRead(ctx, input),
    syncKnownVersions: (input) => syncKnownVersions(ctx, input),
    composeObjects: (input) => composeObjects(ctx, input),
    recordSyncedSnapshot: (input) => changing(input.projectId, recordSyncedSnapshot(ctx, input)),
    snapshotFeed: (input) => snapshotFeed(ctx, input),
    putDatasetContent: (input) => putDatasetContent(ctx, input),
    syncChanges: (input) => syncChanges(ctx, input),
    applySyncedVersions: (input) => changing(input.projectId, applySyncedVersions(ctx, input)),
    syncOutbox: (input) => syncOutbox(ctx, input),
    feedPosition: (projectId) => feedPosition(ctx, projectId),
    holdRetention: (projectId, afterSeq) => ctx.retention.hold(projectId, afterSeq),
    syncOutboxStats: (input) => syncOutboxStats(ctx, input),
    adoptSyncedVersions: (input) => changing(input.projectId, adoptSyncedVersions(ctx, input)),
    gc: (options) => gc(ctx, options),
    fsck: (options) => fsck(ctx, options),
    onFilesChanged(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    async settle() {
      await ctx.batcher.drain();
      await ctx.retention.settle();
    },
    async close() {
      if (closed) return;
      closed = true;
      try {
        await ctx.batcher.drain();
        await ctx.retention.settle();
      } finally {
        await ctx.store.close();
        await ctx.repository.close();
      }
    },
  };
}
