// What the sync model checks (issue 38), each a function returning readable disagreements (empty:
// agreed): the trees of every workstation (disk, and its engine's current versions) against the
// server's head; names (every path is one an operation makes, or a conflict copy of one); no loss
// (every content a workstation versioned is in some version on the server); truth of `sync
// status` (`inSync: false` always carries a reason); `strata fsck` on every home and the server.

import { lstat, readdir, readFile, readlink } from 'node:fs/promises';
import { join } from 'node:path';
import type { VersionRecord } from '../../engine/types.js';
import { snapshotsOf } from './sync-commands.js';
import type { Station, SyncModelWorld } from './sync-world.js';
import { type ApiView, diffTrees, filesOf, readDiskTree, readEngineTree, type Tree } from './tree.js';
import { isIgnoredPath, TreeModel } from './tree-model.js';

/** Retries a read of a tree that a daemon may be changing under it (a name listed, then gone). */
async function settledRead<T>(read: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await read();
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (attempt >= 5 || (code !== 'ENOENT' && code !== 'ENOTDIR')) throw error;
    }
  }
}

/** A workstation's directory as the operations see it (files with their bytes), to pick and check paths. */
export function modelFromDisk(dir: string): Promise<TreeModel> {
  return settledRead(async () => {
    const model = new TreeModel();
    async function walk(rel: string): Promise<void> {
      for (const name of await readdir(rel === '' ? dir : join(dir, rel))) {
        const path = rel === '' ? name : `${rel}/${name}`;
        if (path === '.strata') continue;
        const abs = join(dir, path);
        const st = await lstat(abs);
        if (st.isSymbolicLink()) model.nodes.set(path, { type: 'link', target: await readlink(abs) });
        else if (st.isDirectory()) {
          model.nodes.set(path, { type: 'dir' });
          await walk(path);
        } else if (st.isFile()) model.nodes.set(path, { type: 'file', data: await readFile(abs, 'latin1'), executable: (st.mode & 0o100) !== 0 });
      }
    }
    await walk('');
    return model;
  });
}

/** Files and links on a workstation's disk, as the project has them (no ignored names, no directories). */
export async function diskFiles(station: Station): Promise<Tree> {
  const disk = await settledRead(() => readDiskTree(station.ws.dir));
  return new Map([...filesOf(disk)].filter(([path]) => !isIgnoredPath(path)));
}

/**
 * The current files over the API. A daemon or the server may change the tree between a directory's
 * listing and the read of one below it (404 PATH_NOT_FOUND): read again, from the top.
 */
export async function headFiles(view: ApiView): Promise<Tree> {
  for (let attempt = 1; ; attempt++) {
    try {
      return filesOf(await readEngineTree(view));
    } catch (error) {
      if (attempt >= 5 || !/→ 404: .*PATH_NOT_FOUND/.test((error as Error).message)) throw error;
    }
  }
}

export function sameTree(a: Tree, b: Tree): boolean {
  return diffTrees(a, b, { actual: '', expected: '' }).length === 0;
}

/** A path component an operation makes (fs-ops.ts SLOTS use a, b, c), or a conflict copy of one (of one …). */
const NAME = /^[abc](?: \(conflict ws[ABC] \d{4}-\d{2}-\d{2} \d{4}(?: \d+)?\))*$/;

export function namingFailures(tree: Tree): string[] {
  return [...tree.keys()].filter((path) => !path.split('/').every((part) => NAME.test(part))).map((path) => `unexpected name on the server: ${JSON.stringify(path)}`);
}

/** Every version of the project (all paths, all pages). */
export async function allVersions(view: ApiView): Promise<VersionRecord[]> {
  const out: VersionRecord[] = [];
  let cursor: string | undefined;
  do {
    const page = await view.api<{ items: VersionRecord[]; nextCursor?: string }>('GET', view.projectPath(`/history?limit=1000${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`));
    out.push(...page.items);
    cursor = page.nextCursor;
  } while (cursor);
  return out;
}

/**
 * No loss: every content a workstation has a version of is in some version on the server.
 * `currentOnly` (a retention limit was set: pruning drops old versions by design, on either side at
 * its own pace): only each path's newest version on the workstation is checked.
 */
export async function lossFailures(world: SyncModelWorld, stations: Station[] = world.stations, options: { currentOnly?: boolean } = {}): Promise<string[]> {
  const onServer = new Set((await allVersions(world.server)).map((v) => v.contentHash).filter((h) => h !== null));
  const failures: string[] = [];
  for (const station of stations) {
    let versions = await allVersions(station.ws);
    if (options.currentOnly === true) {
      const newest = new Map<string, VersionRecord>();
      for (const v of versions) if ((newest.get(v.path)?.timestamp ?? '') < v.timestamp) newest.set(v.path, v);
      versions = [...newest.values()];
    }
    for (const version of versions) {
      if (version.contentHash === null || onServer.has(version.contentHash)) continue;
      failures.push(`lost: ${station.name}'s version ${version.versionId} of ${version.path} (${version.size} B, ${version.contentHash.slice(0, 10)}) is in no version on the server`);
    }
  }
  return failures;
}

export interface SyncReasonView {
  code: string;
  message: string;
  needsYou: boolean;
}

export interface StationSync {
  inSync: boolean;
  state: string;
  reasons: SyncReasonView[];
}

/** `strata sync status --json` of the workstation's project (its daemon running). */
export async function syncStatusOf(world: SyncModelWorld, station: Station): Promise<StationSync> {
  const result = await world.cli(station, ['sync', 'status', '--json']);
  if (result.code !== 0) throw new Error(`sync status on ${station.name} exited ${result.code}: ${result.stderr}`);
  const { projects } = JSON.parse(result.stdout) as { projects: Array<{ projectId: string; sync: StationSync }> };
  const project = projects.find((p) => p.projectId === station.ws.projectId);
  if (project === undefined) throw new Error(`sync status on ${station.name} lists no project ${station.ws.projectId}`);
  return project.sync;
}

/** Truth of the status: not in sync always says why. */
export function reasonFailures(station: Station, sync: StationSync): string[] {
  return !sync.inSync && sync.reasons.length === 0 ? [`${station.name}: sync status says inSync: false (state ${sync.state}) with no reason`] : [];
}

/** `strata fsck` on every workstation's home and on the server. */
export async function fsckFailures(world: SyncModelWorld): Promise<string[]> {
  const results = await Promise.all([
    ...world.stations.map(async (station) => {
      const result = await world.cli(station, ['fsck', '--home', station.ws.home], 300_000);
      return result.code === 0 ? null : `fsck of ${station.name}'s home: exit ${result.code}\n${result.stdout}${result.stderr}`;
    }),
    world.sync.serverCli(['fsck']).then((server) => (server.code === 0 ? null : `fsck of the server: exit ${server.code}\n${server.stdout}${server.stderr}`)),
  ]);
  return results.filter((r) => r !== null);
}

/** A project's snapshots (ids) and tags (name → snapshot id), as one line each to compare. */
async function snapshotsAndTags(view: ApiView): Promise<{ snapshots: string; tags: string }> {
  const snapshots = (await snapshotsOf(view)).map((s) => s.snapshotId).sort();
  const tags = (await view.api<{ items: Array<{ tag: string; snapshotId: string }> }>('GET', view.projectPath('/fs/tags'))).items.map((t) => `${t.tag}=${t.snapshotId}`).sort();
  return { snapshots: snapshots.join(' '), tags: tags.join(' ') };
}

/**
 * Every snapshot and tag on every workstation as on the server, once `sync wait` said in sync
 * everywhere. Snapshots and tags travel in the rounds after the versions they pin, so one that
 * arrives within a minute is counted (`late`), not failed; one that never does is a failure.
 */
export async function snapshotFailures(world: SyncModelWorld, stations: Station[]): Promise<{ failures: string[]; late: boolean }> {
  const deadline = Date.now() + 60_000;
  let late = false;
  for (;;) {
    const server = await snapshotsAndTags(world.server);
    const failures: string[] = [];
    for (const station of stations) {
      const here = await snapshotsAndTags(station.ws);
      if (here.snapshots !== server.snapshots) failures.push(`snapshots: ${station.name} has [${here.snapshots}], the server [${server.snapshots}]`);
      if (here.tags !== server.tags) failures.push(`tags: ${station.name} has [${here.tags}], the server [${server.tags}]`);
    }
    if (failures.length === 0 || Date.now() > deadline) return { failures, late };
    late = true;
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}
