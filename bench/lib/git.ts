// The git peer, with a predictable configuration: no user or system config, a fixed identity, and no
// automatic gc (a background `git gc --auto` after committing 20,000 loose objects would eat the CPU
// of whatever is measured next).
import { run, type RunOptions } from './proc.js';

export const GIT_ENV: NodeJS.ProcessEnv = {
  ...process.env,
  GIT_CONFIG_NOSYSTEM: '1',
  GIT_CONFIG_GLOBAL: '/dev/null',
  GIT_AUTHOR_NAME: 'bench',
  GIT_AUTHOR_EMAIL: 'bench@example.com',
  GIT_COMMITTER_NAME: 'bench',
  GIT_COMMITTER_EMAIL: 'bench@example.com',
};

/** `-c` options for every git call: no auto-gc; optionally fsync objects, index and refs (git ≥ 2.36). */
export function gitConfig(durable = false): string[] {
  const base = ['-c', 'gc.auto=0', '-c', 'maintenance.auto=false'];
  return durable ? [...base, '-c', 'core.fsync=added', '-c', 'core.fsyncMethod=batch'] : base;
}

export function git(cwd: string, args: string[], options: { durable?: boolean; input?: RunOptions['input'] } = {}): Promise<string> {
  return run('git', [...gitConfig(options.durable), ...args], { cwd, env: GIT_ENV, ...(options.input === undefined ? {} : { input: options.input }) });
}
