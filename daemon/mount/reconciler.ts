// Turns the mount's local state into engine records, per path, after a short settle delay.
//
// The delay is what gives editors' atomic saves exactly one version: `write tmp; close; rename tmp
// target` reaches us as a release of tmp, then a rename, microseconds apart. When tmp's timer fires it
// no longer exists (its node moved to target), so only target is captured. The same holds for vim's
// `rename target target~; write target`: the pending removal of target is dropped because target
// holds a new file by then. Operations on one path run one at a time, in order (KeyedLocks).
// A new file with a temp-file name (capture/temp-names.ts) waits longer (TEMP_SETTLE_MS), so a tool
// that writes its temp file, pauses and only then renames it still gives the target the one version.
import { StrataError } from '../../engine/errors.js';
import { conflictCopyFor, keptAsConflictCopy, type TreeRefusal, treeRefusal } from '../capture/conflict-copy.js';
import { TEMP_MAX_WAIT_MS, TEMP_SETTLE_MS } from '../capture/temp-names.js';
import { baseOf, type FileNode, type GoneMarker, standsFor } from './file-node.js';
import { captureNode } from './capture.js';
import { mirrorName } from './link-mirror.js';
import type { MountState } from './mount-state.js';
import { recordedWhileRemoved } from './moves.js';
import type { SinkResult } from './sink.js';
import { isWithin, parentOf } from './paths.js';

const RETRY_BASE_MS = 500;
const RETRY_MAX_MS = 30_000;
/** Paths whose delay ends this soon after a sweep run with it. */
const SWEEP_SLACK_MS = 25;
/**
 * While the mount is busy (a tool is unpacking or copying a tree), captures wait — up to this long, and
 * up to DEFER_MAX_PATHS paths — and then run as one batch. On 2 cores the capture work (hashing, the
 * pack's and the metadata's SQLite transactions) otherwise competes with answering the kernel, and a
 * tool like tar waits for every single answer. Batches are also cheaper: one fsync per transaction.
 */
const DEFER_MAX_MS = 2_000;
const DEFER_MAX_PATHS = 5_000;
const DEFER_RECHECK_MS = 50;

export interface ReconcileStats {
  captured: number;
  /** paths whose older versions the size policy does not keep, counted once each */
  historyNotKept: { count: number; example: { path: string; size: number } | null };
  lastVersion: { path: string; versionId: string; kind: 'write' | 'delete'; timestamp: string } | null;
  errors: Array<{ time: string; path: string | null; code: string; message: string }>;
}

export class Reconciler {
  /** path → when its settle delay ends (ms) */
  private readonly due = new Map<string, number>();
  private timer: NodeJS.Timeout | null = null;
  private timerAt = Number.POSITIVE_INFINITY;
  private readonly running = new Map<string, Promise<void>>();
  private readonly attempts = new Map<string, number>();
  private readonly failures = new Map<string, Error>();
  /** new temp-named files in their longer hold → when the hold began (TEMP_MAX_WAIT_MS caps it) */
  private readonly heldSince = new Map<string, number>();
  readonly stats: ReconcileStats = { captured: 0, historyNotKept: { count: 0, example: null }, lastVersion: null, errors: [] };
  readonly #notKept = new Set<string>();
  /** captureFrozen's pass under way, per node */
  readonly #frozenRuns = new Map<FileNode, Promise<void>>();
  private stopping = false;

  constructor(
    private readonly state: MountState,
    private readonly settleMs: number,
  ) {}

  /** A future run is scheduled for the path. */
  hasTimer(path: string): boolean {
    return this.due.has(path);
  }

  pendingCount(): number {
    return this.due.size + this.running.size;
  }

  /**
   * Up to `limit` of the paths pending, running ones first: what a status shows when the count stays
   * up. Stops at `limit`: a status is asked for every 20 ms while 20,000 paths wait (an untar).
   */
  pendingPaths(limit: number): string[] {
    const paths = new Set<string>();
    for (const source of [this.running.keys(), this.due.keys()]) {
      for (const path of source) {
        if (paths.size >= limit) return [...paths];
        paths.add(path);
      }
    }
    return [...paths];
  }

  /** (Re)starts the path's settle delay. */
  schedule(path: string, delayMs?: number): void {
    const now = this.state.now();
    const at = now + (delayMs ?? this.holdFor(path, now));
    this.due.set(path, at);
    if (at < this.timerAt) this.arm(at);
  }

  /** The settle delay, or the temp-file hold for a new temp-named file (see the top of this file). */
  private holdFor(path: string, now: number): number {
    if (!this.state.isHeldTemp(path)) {
      this.heldSince.delete(path);
      return this.settleMs;
    }
    const since = this.heldSince.get(path) ?? now;
    this.heldSince.set(path, since);
    // A temp-named file closed again and again (a `*.tmp` log) is versioned at least this often.
    return now - since >= TEMP_MAX_WAIT_MS ? this.settleMs : Math.max(this.settleMs, TEMP_SETTLE_MS);
  }

  /**
   * One timer for all paths: when it fires, every path whose delay has (nearly) ended runs, together.
   * Their engine writes then share one metadata transaction (the engine's commit batcher groups what
   * arrives together) instead of one fsync each — unpacking 20,000 files in separate transactions
   * kept the event loop blocked in fsync for seconds.
   */
  private arm(at: number): void {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timerAt = at;
    this.timer = setTimeout(() => this.sweep(), Math.max(0, at - this.state.now()));
  }

  private sweep(): void {
    this.timer = null;
    this.timerAt = Number.POSITIVE_INFINITY;
    // Its paths ran meanwhile (settleNow, now()). Deferred below, an empty set armed a timer for
    // "infinity", which Node runs after 1 ms (TimeoutOverflowWarning): the sweep spun while busy.
    if (this.due.size === 0) return;
    const now = this.state.now();
    const horizon = now + SWEEP_SLACK_MS;
    if (this.state.isBusy(now) && this.due.size < DEFER_MAX_PATHS) {
      let oldest = Number.POSITIVE_INFINITY;
      for (const at of this.due.values()) if (at < oldest) oldest = at;
      if (oldest > now - DEFER_MAX_MS) {
        this.arm(Math.max(oldest, now + DEFER_RECHECK_MS));
        return;
      }
    }
    let next = Number.POSITIVE_INFINITY;
    for (const [path, at] of this.due) {
      if (at <= horizon) {
        this.due.delete(path);
        void this.run(path);
      } else if (at < next) next = at;
    }
    if (next !== Number.POSITIVE_INFINITY) this.arm(next);
  }

  /** Reconciles now (fsync of a small file): resolves once the engine recorded the path's state. */
  async now(path: string, force = false): Promise<void> {
    this.due.delete(path);
    await this.run(path, force);
    const error = this.lastErrorFor(path);
    if (error !== null) throw error;
  }

  /**
   * Before a restore or a snapshot (ProjectHost.captureNow): every path waiting for its settle delay
   * (or a temp name's longer hold) runs now, and the runs under way end. A file still open for
   * writing is left to its close, as always: its bytes so far are not a version anyone asked for.
   */
  async settleNow(): Promise<void> {
    for (let round = 0; round < 10 && this.pendingCount() > 0; round++) {
      const paths = [...this.due.keys()];
      this.due.clear();
      await Promise.all([...paths.map((path) => this.run(path)), ...this.running.values()]);
    }
  }

  /** Unmounting: run every pending path at once, capturing even files still open for writing. */
  async flushAll(): Promise<void> {
    this.stopping = true;
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    this.timerAt = Number.POSITIVE_INFINITY;
    await this.settleNow(); // stopping: every run captures open files too
    for (const path of [...this.state.ns.nodes.keys()]) {
      const node = this.state.ns.nodes.get(path)!;
      if (node.dirty && !node.detached) await this.run(path, true);
    }
  }

  private async run(path: string, force = false): Promise<void> {
    // One run per path at a time; a run requested meanwhile happens after it.
    const previous = this.running.get(path);
    this.heldSince.delete(path);
    const next = (async () => {
      if (previous !== undefined) await previous.catch(() => {});
      await this.reconcile(path, force || this.stopping);
    })();
    this.running.set(path, next);
    try {
      await next;
    } finally {
      if (this.running.get(path) === next) this.running.delete(path);
      // Nothing pending and nothing changed still open: everything the journal holds is in the engine.
      if (this.pendingCount() === 0 && !this.anyDirty()) this.state.journal.reset();
    }
  }

  private lastErrorFor(path: string): Error | null {
    return this.failures.get(path) ?? null;
  }

  private async reconcile(path: string, force: boolean): Promise<void> {
    const { ns } = this.state;
    try {
      const node = ns.nodes.get(path);
      if (node !== undefined) {
        await this.reconcileNode(node, force);
        this.scheduleOtherNames(node);
        // A directory removed here and a file made at its name (`rm -r c; echo v > c`): the
        // directory's marker is this path's too, and only ends here. Left behind, it hid the
        // engine's file `c` from the mount's listings for good once the node went idle, while sync
        // said in sync (the sync model's defect 4, seeds 38000-38004).
        const marker = ns.gone.get(path);
        if (marker?.dir === true) await this.reconcileGone(path, marker);
        // A removal's marker under a node that has gone idle meanwhile: the node was the removed
        // file, shown again from the engine before its deletion was recorded. Left here, the marker
        // was never run again: it hid the file from the mount while the engine kept it, and held every
        // directory marker above it (the mount never idle; fsstress seed 7).
        else if (marker !== undefined && !ns.nodes.has(path)) await this.reconcileGone(path, marker);
      } else {
        const marker = ns.gone.get(path);
        if (marker !== undefined) await this.reconcileGone(path, marker);
        else if (!this.state.links.empty && this.state.links.has(path)) await this.mirror(path);
      }
      this.failures.delete(path);
      this.attempts.delete(path);
    } catch (error) {
      this.recordError(path, error);
      this.failures.set(path, error instanceof Error ? error : new Error(String(error)));
      if (this.stopping) return;
      const attempt = (this.attempts.get(path) ?? 0) + 1;
      this.attempts.set(path, attempt);
      // Transient by nature: a file waiting for the removal of a directory at its path, a busy store.
      this.schedule(path, Math.min(RETRY_MAX_MS, RETRY_BASE_MS * 2 ** (attempt - 1)));
    }
  }

  /**
   * A writer opens a file whose closed content still waits for its capture (`echo >> log` in a loop):
   * that content is a version of its own. It was captured before the open was answered, 2.8 ms per
   * `>>` (46× bindfs). Now a small file's closed bytes (in memory, and in the journal since its close)
   * are set aside and recorded in order before the node's next content, with the settle delay's
   * batch. False when the node is not such a file (staged, a link, a rename or restore in waiting,
   * a journal that cannot be written): the caller captures it now, as before.
   */
  freeze(node: FileNode): boolean {
    const content = node.content;
    if (content.kind !== 'memory' || node.symlink || node.superseded || node.busy !== null || node.originMarker !== null) return false;
    if ((node.enginePath !== null && node.enginePath !== node.path) || this.state.journal.problem !== null) return false;
    node.frozen.push({ bytes: Uint8Array.from(content.buf.subarray(0, node.size)), executable: node.executable, journalAt: this.state.journal.length });
    if (!this.due.has(node.path)) this.schedule(node.path);
    return true;
  }

  /**
   * The node's frozen closes, oldest first, each a version where its history is (freeze). One pass
   * per node at a time: runs are per path, and a node renamed while its old name's run was recording
   * them is run under its new name too (each frozen close was recorded twice).
   */
  private captureFrozen(node: FileNode): Promise<void> {
    const running = this.#frozenRuns.get(node);
    if (running !== undefined) return running.then(() => this.captureFrozen(node));
    if (node.frozen.length === 0) return Promise.resolve();
    const run = this.recordFrozen(node).finally(() => this.#frozenRuns.delete(node));
    this.#frozenRuns.set(node, run);
    return run;
  }

  private async recordFrozen(node: FileNode): Promise<void> {
    while (node.frozen.length > 0) {
      const frozen = node.frozen[0]!;
      const path = node.enginePath ?? node.path;
      // A copy: the capture thread takes the buffer it is given (a transfer detaches it), and a write
      // refused now (a file still recorded where this one's directory is) is tried again with these
      // bytes. Reusing them sent a detached buffer, refused forever ("Cannot transfer object of
      // unsupported type", fsstress seed 9).
      const result = await this.state.sink.write(path, frozen.bytes.slice(), frozen.executable, false);
      node.frozen.shift();
      recordedWhileRemoved(this.state, node, path, result.entry.versionId);
      for (const id of result.versionIds) this.state.ns.noteOwnVersion(id);
      if (result.versionIds.length > 0) this.noteVersion(path, result.entry.versionId, result.entry.timestamp);
      // The bytes the node has now are in memory: its base is only what history has at its name.
      if (node.content.kind === 'memory') {
        node.base = baseOf(result.entry);
        node.enginePath = path;
      }
      this.state.journal.append({ op: 'c', path, upTo: frozen.journalAt });
    }
  }

  private async reconcileNode(node: FileNode, force: boolean): Promise<void> {
    const { ns } = this.state;
    if (node.detached) {
      // Removed before its capture, like the content it has now (a file removed in its settle delay).
      node.frozen = [];
      return;
    }
    await this.captureFrozen(node);
    if (node.writers > 0 && !force) return; // the last writer's release schedules us again
    const origin = node.originMarker;
    if (origin !== null && node.enginePath !== null && standsFor(ns.gone.get(node.enginePath), origin)) {
      const from = node.enginePath;
      let refused = null as TreeRefusal | null;
      const result = await this.state.sink.rename(from, node.path).catch((error: unknown) => {
        // The source vanished from the engine meanwhile (a restore, another client): capture afresh.
        if (error instanceof StrataError && (error.code === 'PATH_NOT_FOUND' || error.code === 'STALE_BASE_VERSION')) return null;
        // `mv x c` where the project got a directory `c` from elsewhere: refused a second time (the
        // first may have raced a removal of this mount's own, as in captureOrKeep), `x` goes to the
        // conflict copy instead, its history with it.
        refused = treeRefusal(node.path, error);
        if (refused === null || this.ownChangeInTheWay(node.path, refused) || !this.attempts.has(node.path)) throw error;
        return null;
      });
      if (refused !== null) {
        await this.keepAsConflictCopy(node, refused, from);
        this.recorded(from, origin);
        return;
      }
      this.recorded(from, origin);
      node.originMarker = null;
      if (result !== null) {
        for (const id of result.versionIds) ns.noteOwnVersion(id);
        node.base = baseOf(result.entry);
        node.enginePath = node.path;
        this.noteVersion(node.path, result.entry.versionId, result.entry.timestamp);
      }
    } else if (origin !== null) {
      // Its marker no longer stands at the engine name: the node came back to it (`mv d e; mv e d`
      // within the settle delay: placeNode took the marker away) or the name was taken meanwhile.
      // There is no rename to record. Kept, the origin held the node in the namespace for good, and
      // with it the directory's gone marker above it (never "idle": the mount's pending count stayed
      // at 1, a snapshot waited for it, and the marker hid the engine's other files below the
      // directory from the mount's listings; found by fsstress: bench/mount-stress.ts).
      node.originMarker = null;
    }
    let captured = origin !== null;
    if (node.dirty || node.enginePath !== node.path) {
      const result = await this.captureOrKeep(node);
      if (result === 'kept') return;
      if (result !== null) {
        captured = true;
        if (result.historyKept === false && result.versionIds.length > 0) this.#noteHistoryNotKept(node.path, result.entry.size);
        for (const id of result.versionIds) ns.noteOwnVersion(id);
        if (result.versionIds.length > 0) this.noteVersion(node.path, result.entry.versionId, result.entry.timestamp);
      }
    }
    // Nothing changed while it ran: what the journal holds for the path is in the engine now.
    if (captured && !node.dirty && !node.detached) this.state.journal.append({ op: 'c', path: node.path });
    this.state.dropIfIdle(node);
  }

  /** `file`'s removal or move is in the engine: its marker at `path` goes (or leaves the directory's marker standing in for it). */
  private recorded(path: string, file: GoneMarker): void {
    const { gone } = this.state.ns;
    const marker = gone.get(path);
    if (marker === file) gone.delete(path);
    else if (marker?.replaced === file) {
      marker.replaced = undefined;
      this.schedule(path);
    }
  }

  /**
   * Captures the node, or keeps it as a conflict copy when the project's tree refuses its path
   * because of a change from elsewhere ('kept': the node has left the mount; see keepAsConflictCopy).
   */
  private async captureOrKeep(node: FileNode): Promise<SinkResult | null | 'kept'> {
    let refused: unknown;
    for (let attempt = 1; ; attempt++) {
      try {
        return await captureNode(this.state, node);
      } catch (error) {
        refused = error;
      }
      const refusal = treeRefusal(node.path, refused);
      if (refusal === null || this.ownChangeInTheWay(node.path, refusal)) throw refused;
      // Once more first: a removal of this mount's own may have committed after the engine refused
      // the write (both in the capture thread at once) and its marker gone before this answer came.
      if (attempt === 1) continue;
      await this.keepAsConflictCopy(node, refusal);
      return 'kept';
    }
  }

  /**
   * The engine refused the file at `path` for a directory there or a file above it, and this mount is
   * still recording a change of its own that ends that: a removal below `path` (`rm -r c; echo v >
   * c`, captured before the removals of `c/*`) or of the file above (`rm b; mkdir b; echo v > b/a`).
   * The capture is retried once those are recorded. Anything else there came from elsewhere.
   */
  private ownChangeInTheWay(path: string, refusal: TreeRefusal): boolean {
    const { gone } = this.state.ns;
    if (refusal.kind === 'file-above') {
      const marker = gone.get(refusal.above);
      return marker !== undefined && (!marker.dir || marker.replaced !== undefined);
    }
    for (const name of gone.keys()) if (name !== path && isWithin(name, path)) return true;
    return false;
  }

  /**
   * The mount's half of the rule watch mode keeps (capture/conflict-copy.ts): a file made here where
   * the project meanwhile got a directory from elsewhere (files pulled below the name this mount made
   * a file: the sync model's seed 43002, `rm -r a; echo v15 > a` here while another workstation made
   * `a/a/a`), or below a name where the project got a file back. Retried, it was refused for good:
   * the file was on no version anywhere, sync said "changes here not versioned yet" for ever, and
   * the project's files were never shown. Its bytes are kept as a conflict copy (not this mount's
   * own version: the namespace's poll shows the copy as a change from elsewhere), and the mount then
   * shows the project's tree: the file leaves it, and so does a directory made here for it.
   */
  private async keepAsConflictCopy(node: FileNode, refusal: TreeRefusal, renamedFrom?: string): Promise<void> {
    const { state } = this;
    const { ns } = state;
    const path = node.path;
    const copy = await conflictCopyFor(state.engine, state.projectId, path, refusal, state.workstation, state.now());
    let result: SinkResult | null = null;
    if (renamedFrom !== undefined) {
      // A rename not recorded yet (`mv x c`): recorded to the copy; the old name's tombstone is ours.
      result = await state.sink.rename(renamedFrom, copy);
      ns.noteOwnVersion(result.versionIds[0]!);
      node.originMarker = null;
      node.base = baseOf(result.entry);
      node.enginePath = copy;
    }
    // Bytes written since the rename go to the copy too.
    if (renamedFrom === undefined || node.dirty) result = await captureNode(state, node, copy);
    if (result === null) return;
    state.logger.warn({ path, copy }, `mount: ${keptAsConflictCopy(refusal)}`);
    if (result.versionIds.length > 0) this.noteVersion(copy, result.entry.versionId, result.entry.timestamp);
    // Written again while the copy was made: the node stays, and its next capture is another copy.
    if (node.dirty) return;
    state.journal.append({ op: 'c', path });
    const renumber = node.handles > 0;
    state.detach(node);
    if (refusal.kind === 'directory') {
      // The directory removed here (its marker hid the project's files below it) is the project's again.
      if (ns.gone.get(path)?.dir === true) ns.gone.delete(path);
      ns.invalidate(path, true);
      ns.invalidate(parentOf(path));
      state.onExternalChange(path);
      // Open handles keep reading the file: the directory needs an inode of its own.
      if (renumber) state.forgetInKernel(path, true);
      return;
    }
    // The directory made here for the file gives way to the project's file, unless it holds more.
    ns.invalidate(refusal.above, true);
    await ns.fileReplacesEmptyDir(refusal.above);
    ns.invalidate(parentOf(refusal.above));
    state.onExternalChange(path);
    state.onExternalChange(refusal.above);
  }

  /** A hard-linked file's primary was captured: its other names get that content (link-mirror.ts). */
  private scheduleOtherNames(node: FileNode): void {
    const { links } = this.state;
    if (links.empty || node.dirty || node.detached || !links.has(node.path) || links.primaryOf(node.path) !== node.path) return;
    for (const name of links.namesOf(node.path).slice(1)) this.schedule(name, 0);
  }

  private async mirror(name: string): Promise<void> {
    const result = await mirrorName(this.state, name);
    if (result === null) return;
    for (const id of result.versionIds) this.state.ns.noteOwnVersion(id);
    if (result.versionIds.length > 0) this.noteVersion(name, result.entry.versionId, result.entry.timestamp);
  }

  private async reconcileGone(path: string, marker: GoneMarker): Promise<void> {
    const { ns } = this.state;
    // The new name records the rename (tombstone here + write there, atomically): nothing to do here.
    if (this.moveRecordedByNode(marker)) return;
    if (marker.dir) {
      // A file's removal or move at this name, still to be recorded (GoneMarker.replaced), goes first.
      const replaced = marker.replaced;
      if (replaced !== undefined) {
        if (this.moveRecordedByNode(replaced)) {
          // Its node records the move (reconcileNode) and then runs this path again.
          this.schedule(path);
          return;
        }
        await this.removeFile(path, replaced.shown, () => {
          if (marker.replaced === replaced) marker.replaced = undefined;
        });
      }
      const busy = [...ns.nodes.keys(), ...ns.gone.keys()].some((p) => p !== path && isWithin(p, path));
      if (busy) {
        this.schedule(path);
        return;
      }
      if (ns.gone.get(path) === marker) {
        ns.gone.delete(path);
        // A directory made or moved to this name while the marker stood (`mv d e` onto an empty `e`)
        // was listed without the engine's files: those of its files recorded meanwhile, whose nodes
        // had gone idle, were missing from it for good — and a later `mv e f` left them behind in
        // the engine, on no disk (fsstress seed 5).
        ns.forgetListing(path);
        this.state.forgetInKernel(path);
      }
      return;
    }
    const gaveWay = await this.removeFile(path, marker.shown, () => {
      if (ns.gone.get(path) === marker) ns.gone.delete(path);
    });
    if (gaveWay) return;
    if (!ns.nodes.has(path)) this.state.journal.append({ op: 'c', path });
  }

  /** The file of `marker` moved, and its node at the new name will record the rename (reconcileNode). */
  private moveRecordedByNode(marker: GoneMarker): boolean {
    const moved = marker.movedTo;
    return moved !== null && !moved.detached && moved.originMarker === marker && this.state.ns.nodes.get(moved.path) === moved;
  }

  /**
   * Records the removal of the file at `path` (which showed version `shown`); true when it gave way.
   * `recorded` takes the marker away first, in the same turn as the answer: a listing loaded after it
   * must show a file that gave way.
   */
  private async removeFile(path: string, shown: string | undefined, recorded: () => void): Promise<boolean> {
    const { ns } = this.state;
    const result = await this.state.sink.remove(path, shown);
    recorded();
    if (result === 'gave way') {
      // Changed elsewhere after the removal here (a pull, the API): the newer file stays and shows
      // again, as a deletion gives way to a newer edit in watch mode. Its content is the engine's.
      this.state.logger.info({ path }, 'a removal gave way to a newer version of the file made elsewhere; the file is back');
      ns.invalidate(parentOf(path));
      this.state.onExternalChange(path);
      return true;
    }
    if (result !== 'absent') {
      for (const id of result.versionIds) ns.noteOwnVersion(id);
      this.noteVersion(path, result.versionIds[0]!, new Date(this.state.now()).toISOString(), 'delete');
    }
    return false;
  }

  /** Said once per path in the log; counted, with an example, in `strata status`. */
  #noteHistoryNotKept(path: string, size: number): void {
    if (this.#notKept.has(path) || this.#notKept.size >= 10_000) return;
    this.#notKept.add(path);
    this.stats.historyNotKept = { count: this.#notKept.size, example: this.stats.historyNotKept.example ?? { path, size } };
    this.state.logger.warn({ path, size }, 'the size policy keeps only the current content of this file: its older versions are not kept (strata policy)');
  }

  private anyDirty(): boolean {
    for (const node of this.state.ns.nodes.values()) if (node.dirty && !node.detached) return true;
    return false;
  }

  private noteVersion(path: string, versionId: string, timestamp: string, kind: 'write' | 'delete' = 'write'): void {
    this.stats.captured += 1;
    this.stats.lastVersion = { path, versionId, kind, timestamp };
    this.state.onCaptured(path);
  }

  private recordError(path: string, error: unknown): void {
    const code = error instanceof StrataError ? error.code : ((error as NodeJS.ErrnoException | null)?.code ?? 'INTERNAL');
    const message = error instanceof Error ? error.message : String(error);
    this.stats.errors.push({ time: new Date(this.state.now()).toISOString(), path, code, message });
    if (this.stats.errors.length > 20) this.stats.errors.shift();
    // An error without a code is a defect of ours: its stack is what the report needs.
    const stack = code === 'INTERNAL' && error instanceof Error ? error.stack : undefined;
    this.state.logger.warn({ path, code, err: message, stack }, 'mount: capture failed, will retry');
  }
}
