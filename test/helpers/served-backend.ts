import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { expect } from 'vitest';
import { baseEnv, parseJson, type RunResult, runCli, type ServeHandle, startServe, tempDir } from '../cli-harness.js';
import { createTestSchema, type TestSchema } from './postgres.js';

export type Backend = 'sqlite' | 'postgres';

export interface ServedBackend {
  env: NodeJS.ProcessEnv;
  dir: string;
  /** a new project, as the CLI's target (STRATA_PROJECT_ID set in the returned env) */
  project(name: string): Promise<NodeJS.ProcessEnv>;
  dispose(): Promise<void>;
}

/**
 * A bootstrapped home served by `strata serve` on SQLite (the default) or on this machine's Postgres
 * (a schema of its own; objects stay in the home): the two metadata repositories a CLI feature must
 * work on.
 */
export async function servedBackend(backend: Backend, prefix: string): Promise<ServedBackend> {
  const dir = await tempDir(prefix);
  let schema: TestSchema | undefined;
  let server: ServeHandle | undefined;
  try {
    let env = baseEnv(join(dir.path, 'config'));
    if (backend === 'postgres') {
      schema = await createTestSchema('strata_cli');
      env = { ...env, STRATA_DATABASE_URL: schema.url, STRATA_PEPPER: randomBytes(32).toString('hex') };
    }
    const home = join(dir.path, 'home');
    const boot = await runCli(['admin', 'bootstrap', '--home', home, '--json'], env);
    if (boot.code !== 0) throw new Error(`strata admin bootstrap exited ${boot.code}: ${boot.stderr}`);
    const apiKey = parseJson<{ apiKey: string }>(boot).apiKey;
    server = await startServe(home, env);
    const served: ServedBackend = {
      env: { ...env, STRATA_SERVER_URL: server.url, STRATA_API_KEY: apiKey },
      dir: dir.path,
      async project(name) {
        const created = await runCli(['project', 'create', name, '--json'], served.env);
        if (created.code !== 0) throw new Error(`strata project create exited ${created.code}: ${created.stderr}`);
        return { ...served.env, STRATA_PROJECT_ID: parseJson<{ projectId: string }>(created).projectId };
      },
      async dispose() {
        await server?.stop();
        await schema?.drop();
        await dir.remove();
      },
    };
    return served;
  } catch (error) {
    await server?.stop();
    await schema?.drop();
    await dir.remove();
    throw error;
  }
}

/**
 * The CLI against whatever environment `envOf` gives at call time (a test's current project):
 * `cli` runs it, `ok` runs it with --json, expects exit 0 (naming the command and its stderr
 * otherwise) and parses the document.
 */
export function cliIn(envOf: () => NodeJS.ProcessEnv): {
  cli(args: string[], input?: string): Promise<RunResult>;
  ok<T>(args: string[], input?: string): Promise<T>;
} {
  const cli = (args: string[], input?: string): Promise<RunResult> => runCli(args, envOf(), input === undefined ? {} : { input });
  return {
    cli,
    async ok<T>(args: string[], input?: string): Promise<T> {
      const result = await cli([...args, '--json'], input);
      expect(result.code, `strata ${args.join(' ')}: ${result.stderr}`).toBe(0);
      return parseJson<T>(result);
    },
  };
}
