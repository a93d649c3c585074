// Where `strata checkout --to DIR` and `strata git clone DIR` may write: never inside a project's
// directory, whose daemon would record every file written there as a new version of that project.
import { stat } from 'node:fs/promises';
import { dirname } from 'node:path';
import { discoverProject } from './discover.js';
import { CliError, EXIT } from './errors.js';

/** TARGET_IN_PROJECT when `dir` (or, if it does not exist yet, its nearest existing parent) is in a project's directory. */
export async function refuseInsideProject(dir: string): Promise<void> {
  let existing = dir;
  while (!(await exists(existing)) && dirname(existing) !== existing) existing = dirname(existing);
  const project = discoverProject(existing);
  if (project === null) return;
  throw new CliError('TARGET_IN_PROJECT', `${dir} is inside the project directory ${project.dir}, whose daemon would record the files as new versions: choose a directory outside it`, {
    exitCode: EXIT.conflict,
    details: { path: dir, projectDir: project.dir },
  });
}

async function exists(path: string): Promise<boolean> {
  return stat(path).then(
    () => true,
    () => false,
  );
}
