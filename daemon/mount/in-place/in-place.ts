// An in-place mount (`strata mount DIR --import`): the mount goes over a directory that holds the
// project's files, and leaves them there when it ends. This is the mount host's part before the mount
// (sync-in.ts: import what the directory holds) and after it (write-back.ts: the project's tree back
// into the directory).
//
// The directory is opened before the mount covers it; while mounted, that descriptor still reaches
// the files underneath (dir-handle.ts). The mount's backing directory (ignored and unversioned
// entries, backing.ts) is `DIR/.strata/unversioned`, reached the same way: on the directory's own
// filesystem, so `.git/` moves in and out with one rename, never a copy, and a crash leaves it in
// one place or the other, inside the directory, never half-copied.
//
// The daemon state remembers whether the directory is current (`written`) or the mount is (`mounted`,
// also after a kill -9): `strata status` and `strata unmount` without a daemon tell the user.
import { rmdir } from 'node:fs/promises';
import { join } from 'node:path';
import { ERROR_CATALOGUE, type ErrorCode, StrataError } from '../../../engine/errors.js';
import { throughLink } from '../../beneath.js';
import { MAX_CAPTURE_ERRORS } from '../../capture/pipeline.js';
import { createIgnoreRules } from '../../capture/ignore.js';
import type { HostContext, ScanProgress } from '../../host.js';
import type { MountAttrs } from '../attrs.js';
import type { MountTimes } from '../times.js';
import { mountsAt } from '../stale-mount.js';
import { DirHandle } from './dir-handle.js';
import { moveEntry } from './move.js';
import { type SyncInReport, syncIn } from './sync-in.js';
import { moveOut, type WriteBackDeps, type WriteBackReport, writeBack } from './write-back.js';

export const IN_PLACE_FLAG = 'mount.inPlace';
export const BACKING_DIR = '.strata/unversioned';
const DISPLACED_DIR = '.strata/displaced';
const MAX_WARNINGS = 20;

export interface InPlaceState {
  /** `mounted`: the mount (engine and backing directory) has the files; `written`: the directory has them */
  session: 'mounted' | 'written';
  at: string;
  /** the last write-back, when it ended */
  lastWriteBack?: WriteBackReport;
}

export class InPlaceDir {
  readonly progress: ScanProgress;
  readonly warnings: string[] = [];
  #warned = 0;
  #aborted = false;
  private readonly stamp = new Date().toISOString().replace(/[:.]/g, '-');

  private constructor(
    private readonly ctx: HostContext,
    private readonly root: DirHandle,
    private readonly backing: DirHandle,
  ) {
    const known = ctx.state.index.count(ctx.projectId) > 0;
    this.progress = { kind: known ? 'catch-up' : 'initial', done: 0, total: 0, captured: 0, finished: false };
  }

  /** Opens the directory (not mounted: a stale mount must be gone) and its backing directory. */
  static async open(ctx: HostContext): Promise<InPlaceDir> {
    const root = await DirHandle.open(ctx.dir);
    try {
      const found = await root.descend(BACKING_DIR, { create: true, mode: 0o700 });
      if (found === null) throw throughLink(BACKING_DIR, '.strata');
      // Its own root: paths below it are project paths, as the mount's Backing sees them.
      const backing = await DirHandle.open(`${found.self}/.`).finally(() => found.close());
      return new InPlaceDir(ctx, root, backing);
    } catch (error) {
      await root.close();
      throw error;
    }
  }

  static state(ctx: Pick<HostContext, 'state' | 'projectId'>): InPlaceState | undefined {
    return ctx.state.flags.get<InPlaceState>(ctx.projectId, IN_PLACE_FLAG);
  }

  /** The mount's backing directory, named through its descriptor: it stays reachable under the mount. */
  get backingRoot(): string {
    return `${this.backing.self}/.`;
  }

  /** Imports what the directory holds (only what changed since it was last in sync). */
  async syncIn(attrs: MountAttrs, times: MountTimes): Promise<SyncInReport> {
    // From the first move on, the directory alone is not the project (`.git/` may be in the backing
    // directory): a kill from here on is a session to finish, like one while mounted.
    this.markMounted();
    await this.adoptHomeBacking();
    const rules = createIgnoreRules(this.ctx.dir);
    const host: HostContext = { ...this.ctx, capture: { ...this.ctx.capture, isIgnored: (path, dir) => rules.ignores(path, dir) } };
    const lastErrorBefore = this.ctx.capture.stats().errors.at(-1);
    const report = await syncIn({
      host,
      rules,
      root: this.root,
      backing: this.backing,
      attrs,
      times,
      progress: this.progress,
      displace: (path) => this.displace(path),
      warn: (message) => this.warn(message),
      aborted: () => this.#aborted,
    });
    this.ctx.logger.info({ dir: this.ctx.dir, ...report }, `imported ${this.ctx.dir}: ${report.examined} files looked at, ${report.versioned} versioned`);
    // A file the import could not version would be hidden under the mount: no mount then (the caller
    // moves everything back), and the user learns which file and why.
    const errors = this.ctx.capture.stats().errors;
    const failed = errors.slice(lastErrorBefore === undefined ? 0 : errors.indexOf(lastErrorBefore) + 1);
    if (failed.length > 0) {
      const first = failed[0]!;
      const code: ErrorCode = first.code in ERROR_CATALOGUE ? (first.code as ErrorCode) : 'STORAGE_ERROR';
      throw new StrataError(code, {
        message: `${failed.length}${failed.length === MAX_CAPTURE_ERRORS ? ' or more' : ''} file(s) could not be imported, e.g. ${JSON.stringify(first.path)}: ${first.message}; nothing was mounted, and ${this.ctx.dir} holds its files as before`,
        details: { dir: this.ctx.dir, failed: failed.length, path: first.path },
      });
    }
    return report;
  }

  /**
   * A mount project that becomes in-place (`--import` on an existing one) had its backing directory
   * under the home: what it holds moves to the new one (a rename when both are on one filesystem).
   */
  private async adoptHomeBacking(): Promise<void> {
    const old = join(this.ctx.home, 'daemon', 'mounts', this.ctx.projectId, 'unversioned');
    let from: DirHandle;
    try {
      from = await DirHandle.open(old);
    } catch {
      return; // none: the usual case
    }
    try {
      for (const entry of await from.list()) {
        const outcome = await moveEntry({ from, to: this.backing, name: entry.name, path: entry.name, displace: (path) => this.displace(path) });
        if (outcome === 'skipped') this.warn(`${JSON.stringify(entry.name)} stays in ${old} (another filesystem than ${this.ctx.dir}): move it into ${this.ctx.dir} yourself`);
      }
    } finally {
      await from.close();
    }
    await rmdir(old).catch(() => undefined);
  }

  /** The project is being stopped while it imports: the scan ends at the next file. */
  abort(): void {
    this.#aborted = true;
  }

  /** From here on the mount has the files (also when the daemon is killed). */
  markMounted(): void {
    this.setState({ session: 'mounted' });
  }

  /**
   * Writes the project's tree back into the directory; the mount must be gone (else nothing is
   * written: the files stay in the project, and the next unmount writes them).
   */
  async writeBack(mount: Pick<WriteBackDeps, 'explicitDirs' | 'attrs' | 'times' | 'setTimes'>): Promise<WriteBackReport | null> {
    const dir = this.ctx.dir;
    if ((await mountsAt(dir)).some((m) => m.fsType.startsWith('fuse'))) {
      this.warn(`${dir} is still mounted: its files were not written back (they are all in the project; the next unmount writes them)`);
      return null;
    }
    const rules = createIgnoreRules(dir);
    const host: HostContext = { ...this.ctx, capture: { ...this.ctx.capture, isIgnored: (path, isDir) => rules.ignores(path, isDir) } };
    const report = await writeBack({
      host,
      root: this.root,
      backing: this.backing,
      explicitDirs: mount.explicitDirs,
      attrs: mount.attrs,
      times: mount.times,
      setTimes: mount.setTimes,
      rules,
      displace: (path) => this.displace(path),
      projectJson: `${JSON.stringify({ projectId: this.ctx.projectId, home: this.ctx.home }, null, 2)}\n`,
      warn: (message) => this.warn(message),
    });
    const complete = report.failed === 0;
    if (complete) this.setState({ session: 'written', lastWriteBack: report });
    else this.setState({ session: 'mounted', lastWriteBack: report });
    const log = complete ? this.ctx.logger.info.bind(this.ctx.logger) : this.ctx.logger.error.bind(this.ctx.logger);
    log({ dir, ...report }, complete ? `wrote the project back into ${dir}` : `could not write everything back into ${dir}`);
    return report;
  }

  /**
   * The mount did not start after all (the import failed, FUSE refused): what moved into the backing
   * directory goes back, so `.git/` and the rest are where the user left them.
   */
  async abandon(): Promise<void> {
    try {
      await moveOut({ root: this.root, displace: (path) => this.displace(path), warn: (message) => this.warn(message) }, this.backing, createIgnoreRules(this.ctx.dir));
      const marker = await this.root.child('.strata');
      if (marker !== null) await rmdir(marker.entry('unversioned')).catch(() => undefined).finally(() => marker.close());
      // What the import versioned is what the directory holds (the index says so): it is whole again.
      this.setState({ session: 'written' });
    } catch (error) {
      this.ctx.logger.error({ dir: this.ctx.dir, err: (error as Error).message }, `could not move everything back out of ${BACKING_DIR}`);
    }
    await this.close();
  }

  async close(): Promise<void> {
    await this.backing.close().catch(() => undefined);
    await this.root.close().catch(() => undefined);
  }

  private setState(state: Omit<InPlaceState, 'at'>): void {
    this.ctx.state.flags.set(this.ctx.projectId, IN_PLACE_FLAG, { ...state, at: new Date().toISOString() } satisfies InPlaceState);
  }

  /** `.strata/displaced/<this run>/<parent of path>/`: where an entry found on both sides goes aside. */
  private async displace(path: string): Promise<DirHandle> {
    const slash = path.lastIndexOf('/');
    const parent = slash === -1 ? '' : path.slice(0, slash);
    const at = `${DISPLACED_DIR}/${this.stamp}${parent === '' ? '' : `/${parent}`}`;
    const dir = await this.root.descend(at, { create: true, mode: 0o700 });
    if (dir === null) throw new Error(`cannot make ${at} in ${this.ctx.dir}`);
    this.warn(`${JSON.stringify(path)} was both in the directory and in the mount's backing directory: one of them was kept in ${this.ctx.dir}/${at}`);
    return dir;
  }

  private warn(message: string): void {
    this.ctx.logger.warn({ dir: this.ctx.dir }, message);
    this.#warned += 1;
    if (this.warnings.length < MAX_WARNINGS) this.warnings.push(message);
    else if (this.#warned === MAX_WARNINGS + 1) this.warnings.push('(more warnings in the daemon log)');
  }
}
