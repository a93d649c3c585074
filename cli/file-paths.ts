// Path arguments inside a project directory mean what they mean to git: relative to the working
// directory. `cd thesis/analysis && strata history fit.m` asks about analysis/fit.m, and `strata rm
// fit.m` there can never remove the fit.m at the project root. Absolute paths inside the project
// work too. With --project / STRATA_PROJECT_ID (no directory to be in) a path is a project path as
// given.

import { realpathSync } from 'node:fs';
import { isAbsolute, relative, resolve, sep } from 'node:path';
import { parseShownPath } from '../engine/raw-names.js';
import { usageError } from './errors.js';

const inside = (rel: string) => rel === '' || !(rel === '..' || rel.startsWith(`..${sep}`) || isAbsolute(rel));

function realOrResolved(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return resolve(path);
  }
}

/**
 * `arg` as a project path. `root`: the project directory found from the working directory (a real
 * path), or undefined when the project was named explicitly. `'/'` stays the project root.
 */
export function toProjectPath(typed: string, root: string | undefined, cwd: string = process.cwd()): string {
  // `bad\xff.txt`, as status and history show a name that is not UTF-8: the shell cannot hand those
  // bytes to Node intact (argv is decoded as UTF-8), so the shown form is what is typed.
  const arg = parseShownPath(typed);
  if (root === undefined || arg === '/') return arg === '/' ? '' : arg;
  const here = realOrResolved(cwd);
  if (!inside(relative(root, here))) return arg;
  let rel = relative(root, resolve(here, arg));
  // An absolute path through a symlink to the project: compare real paths.
  if (!inside(rel) && isAbsolute(arg)) rel = relative(root, realOrResolved(arg));
  if (!inside(rel)) throw usageError(`${arg} is outside the project directory ${root}`, { field: 'path' });
  const path = rel.split(sep).join('/');
  // A trailing slash (`ls data/`) or a glob keeps its meaning: resolve() only dropped the slash.
  return arg.endsWith('/') && path !== '' ? `${path}/` : path;
}
