import { homedir } from 'node:os';
import { join, resolve } from 'node:path';

/** The Strata home: --home, else $STRATA_HOME, else $XDG_DATA_HOME/strata, else ~/.local/share/strata. */
export function resolveHome(flag?: string, env: NodeJS.ProcessEnv = process.env): string {
  if (flag !== undefined && flag !== '') return resolve(flag);
  if (env['STRATA_HOME']) return resolve(env['STRATA_HOME']);
  if (env['XDG_DATA_HOME']) return resolve(env['XDG_DATA_HOME'], 'strata');
  return join(homedir(), '.local', 'share', 'strata');
}
