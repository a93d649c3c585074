// What capture skips: `.strata/` always, the defaults below, and `.strataignore` at the project root
// (gitignore syntax, through the `ignore` package — the matcher npm, eslint and prettier use).

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import ignore, { type Ignore } from 'ignore';

export const STRATAIGNORE = '.strataignore';

/**
 * Watch mode creates a link that comes from the project under this temporary name in the link's own
 * directory, then renames it over the path (materialize.ts): never anything to version, even if a
 * crash leaves one behind.
 */
export const INCOMING_TEMP_PREFIX = '.strata-incoming-';

/** Tool droppings nobody wants versioned: VCS data, editor swap/lock/backup files, caches. */
export const DEFAULT_IGNORES: readonly string[] = [
  '.git/',
  '.hg/',
  '.svn/',
  '*.swp',
  '*.swo',
  '*.swx',
  '*~',
  '.#*',
  // emacs auto-save files; the backslash because a leading '#' starts a comment in gitignore syntax
  '\\#*#',
  // vim writes and deletes "4913" to probe whether it may create files in the directory
  '4913',
  '.DS_Store',
  '__pycache__/',
  '*.pyc',
  '.~lock.*#',
  // SQLite's side files: a -wal or -journal only means something with the exact database state it
  // was written against (a rollback journal synced beside an older copy of its database would be
  // "rolled back" into it), and their committed content reaches the database file itself at the
  // last close. The database is versioned; these are not (docs/mount.md, databases).
  '*.db-wal',
  '*.db-shm',
  '*.db-journal',
  '*.sqlite-wal',
  '*.sqlite-shm',
  '*.sqlite-journal',
  '*.sqlite3-wal',
  '*.sqlite3-shm',
  '*.sqlite3-journal',
];

/**
 * How many questions one `ignore` instance answers before a fresh one takes over. The package caches
 * the answer for every path it is asked about and never forgets: after the daemon imported a
 * 200,000-file project that cache held ~40 of its 48 MB of live heap (heap snapshot: one object with
 * 200,000 keys, their strings and result objects), and it would keep growing with every temp-file name
 * a long-running daemon sees.
 */
export const IGNORE_CACHE_LIMIT = 8192;

/**
 * An `ignore` matcher with bounded memory: every IGNORE_CACHE_LIMIT questions the parsed rules are
 * copied into a new instance (`add(instance)` copies parsed rules: nothing is parsed again), so the
 * cache still serves the many checks of one directory's parents while it lives.
 */
export class BoundedIgnore {
  private current: Ignore;
  private asked = 0;

  /** `rules` is only copied from, never asked: it keeps no cache of its own. */
  constructor(private readonly rules: Ignore) {
    this.current = ignore().add(rules);
  }

  static of(patterns: readonly string[]): BoundedIgnore {
    return new BoundedIgnore(ignore().add([...patterns]));
  }

  ignores(path: string): boolean {
    if (this.asked === IGNORE_CACHE_LIMIT) {
      this.current = ignore().add(this.rules);
      this.asked = 0;
    }
    this.asked += 1;
    return this.current.ignores(path);
  }
}

export interface IgnoreRules {
  /** project path ('/'-separated); `dir` when the path is a directory */
  ignores(path: string, dir?: boolean): boolean;
  /** re-reads `.strataignore` (after it changed); returns the problem, if any, instead of throwing */
  reload(): string | null;
}

export function createIgnoreRules(root: string): IgnoreRules {
  let matcher = BoundedIgnore.of(DEFAULT_IGNORES);
  const rules: IgnoreRules = {
    ignores(path, dir = false) {
      if (path === '.strata' || path.startsWith('.strata/')) return true;
      if (path === '') return false;
      if (path.startsWith(INCOMING_TEMP_PREFIX, path.lastIndexOf('/') + 1)) return true;
      return matcher.ignores(dir ? `${path}/` : path);
    },
    reload() {
      const next: Ignore = ignore().add([...DEFAULT_IGNORES]);
      try {
        next.add(readFileSync(join(root, STRATAIGNORE), 'utf8'));
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code;
        if (code !== 'ENOENT' && code !== 'ENOTDIR') {
          matcher = new BoundedIgnore(next);
          return `cannot read ${STRATAIGNORE}: ${(error as Error).message}`;
        }
      }
      matcher = new BoundedIgnore(next);
      return null;
    },
  };
  rules.reload();
  return rules;
}
