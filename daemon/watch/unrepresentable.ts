// Files (and directories) in a watched directory whose names the project cannot record: the scans and
// events find them by their raw bytes (engine/raw-names.ts) and this list keeps them, so that
// `strata status`, the log and the sync verdict (sync-verdict.ts UNREPRESENTABLE) say so. Before it,
// `printf x > "$(printf 'bad\xff\xfename.txt')"` left nothing anywhere (issue 38 item 4): Node handed
// the watcher a U+FFFD name that no lstat could find, and the path was taken for one already gone.
// Names that are not UTF-8 are recorded now (their stray bytes as U+EF80-U+EFFF); what is left here
// are names whose own text holds one of those reserved characters.

import { lstatSync } from 'node:fs';
import { lstat } from 'node:fs/promises';
import type { Logger } from 'pino';
import { diskPath, showNameBytes, showPath } from '../../engine/raw-names.js';

/** Entries kept (each names one path; the count goes on past it). */
const MAX_KEPT = 1_000;
/** Paths warned about in the log, so that each is warned about once (a set that stays bounded). */
const MAX_WARNED = 10_000;
/** How often status re-checks that the names it lists are still there (a directory above them may have gone). */
const RECHECK_MS = 1_000;

export interface BadName {
  /** the path with its non-UTF-8 bytes as \xHH (for people; not a path) */
  shown: string;
  /** the absolute path's bytes */
  raw: Buffer;
  directory: boolean;
  reason: string;
}

export interface UnrepresentableSummary {
  count: number;
  /** up to 20, as shown to people */
  paths: string[];
  /** one line each, as `strata status` prints them */
  lines: string[];
}

/** Why a name cannot be recorded (engine/raw-names.ts encodeName: the one name it gives null for). */
export const RESERVED = 'name holds a character Strata reserves for bytes that are not UTF-8 (U+EF80-U+EFFF)';

export class UnrepresentableNames {
  readonly #root: string;
  readonly #logger: Logger;
  readonly #entries = new Map<string, BadName>();
  readonly #warned = new Set<string>();
  #checkedAt = 0;

  constructor(root: string, logger: Logger) {
    this.#root = root;
    this.#logger = logger;
  }

  /** A walk found `name` (raw bytes) in the project-relative directory `parent` ('' = the root). */
  found(parent: string, name: Buffer, directory: boolean): void {
    const reason = RESERVED;
    const shown = this.#shown(parent, name);
    const raw = this.#raw(parent, name);
    if (!this.#entries.has(shown) && this.#entries.size >= MAX_KEPT) return;
    this.#entries.set(shown, { shown, raw, directory, reason });
    if (!this.#warned.has(shown)) {
      if (this.#warned.size >= MAX_WARNED) this.#warned.clear();
      this.#warned.add(shown);
      this.#logger.warn({ path: shown, reason }, `not versioned: ${reason}: ${shown}${directory ? '/ (a directory: nothing in it is versioned)' : ''}`);
    }
  }

  /** An event named `name` in `parent`: it is there (listed) or gone (forgotten). */
  async event(parent: string, name: Buffer): Promise<void> {
    const stat = await lstat(this.#raw(parent, name)).catch(() => null);
    if (stat !== null && (stat.isFile() || stat.isSymbolicLink() || stat.isDirectory())) this.found(parent, name, stat.isDirectory());
    else this.#entries.delete(this.#shown(parent, name));
  }

  /** `parent` is a recorded path (it may hold bytes that are not UTF-8, as U+EF80-U+EFFF). */
  #shown(parent: string, name: Buffer): string {
    return parent === '' ? showNameBytes(name) : `${showPath(parent)}/${showNameBytes(name)}`;
  }

  #raw(parent: string, name: Buffer): Buffer {
    const dir = diskPath(this.#root, parent);
    return Buffer.concat([typeof dir === 'string' ? Buffer.from(dir) : dir, Buffer.from('/'), name]);
  }

  /** What status and the sync verdict show. Names no longer on disk (renamed away, a parent removed) drop out. */
  summary(): UnrepresentableSummary {
    const now = Date.now();
    if (now - this.#checkedAt >= RECHECK_MS) {
      this.#checkedAt = now;
      // A stat per listed name (there are few): an event for the name itself need not come when a
      // directory above it is removed or renamed.
      for (const [key, entry] of this.#entries) {
        try {
          lstatSync(entry.raw);
        } catch {
          this.#entries.delete(key);
        }
      }
    }
    const entries = [...this.#entries.values()].sort((a, b) => (a.shown < b.shown ? -1 : 1));
    const shown = entries.slice(0, 20);
    const lines = shown.map((e) => `not versioned: ${e.reason}: ${e.shown}${e.directory ? '/ (a directory: nothing in it is versioned or synced)' : ''}`);
    if (entries.length > shown.length) lines.push(`not versioned: ${entries.length - shown.length} more names the project cannot record (the log lists each)`);
    return { count: entries.length, paths: shown.map((e) => e.shown), lines };
  }
}
