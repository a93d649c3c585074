// What capture skips: `.strata/` always, the defaults below, and `.strataignore` at the project root
// (gitignore syntax, through the `ignore` package — the matcher npm, eslint and prettier use).

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import ignore, { type Ignore } from 'ignore';

export const STRATAIGNORE = '.strataignore';

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
];

export interface IgnoreRules {
  /** project path ('/'-separated); `dir` when the path is a directory */
  ignores(path: string, dir?: boolean): boolean;
  /** re-reads `.strataignore` (after it changed); returns the problem, if any, instead of throwing */
  reload(): string | null;
}

export function createIgnoreRules(root: string): IgnoreRules {
  let matcher: Ignore = ignore().add([...DEFAULT_IGNORES]);
  const rules: IgnoreRules = {
    ignores(path, dir = false) {
      if (path === '.strata' || path.startsWith('.strata/')) return true;
      if (path === '') return false;
      return matcher.ignores(dir ? `${path}/` : path);
    },
    reload() {
      const next = ignore().add([...DEFAULT_IGNORES]);
      try {
        next.add(readFileSync(join(root, STRATAIGNORE), 'utf8'));
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code;
        if (code !== 'ENOENT' && code !== 'ENOTDIR') {
          matcher = next;
          return `cannot read ${STRATAIGNORE}: ${(error as Error).message}`;
        }
      }
      matcher = next;
      return null;
    },
  };
  rules.reload();
  return rules;
}
