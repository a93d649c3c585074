// `--server URL` inside a project directory chooses that server, and the exported STRATA_API_KEY goes
// with it (the note the CLI prints there says to pass --server to choose another). The key was dropped
// as if the directory's daemon were still the target: NO_CREDENTIALS, exit 5.
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bootstrapHome } from '../server/bootstrap.js';
import { startServer } from '../server/serve.js';
import { baseEnv, runCli } from './cli-harness.js';
import { tempDir } from './helpers/world.js';

describe('--server inside a project directory', () => {
  let root: { path: string; cleanup: () => Promise<void> };
  let server: { url: string; close(): Promise<void> };
  let apiKey: string;

  beforeAll(async () => {
    root = await tempDir('strata-server-flag-');
    ({ apiKey } = await bootstrapHome({ home: join(root.path, 'server'), environment: 'local' }));
    server = await startServer({ home: join(root.path, 'server'), listen: '127.0.0.1:0', logger: false, environment: 'local' });
  });
  afterAll(async () => {
    await server.close();
    await root.cleanup();
  });

  it('uses the exported key for that server', async () => {
    const dir = join(root.path, 'thesis');
    await mkdir(join(dir, '.strata'), { recursive: true });
    await writeFile(join(dir, '.strata', 'project.json'), JSON.stringify({ projectId: 'p-local', home: join(root.path, 'home') }));
    const env = { ...baseEnv(join(root.path, 'config')), STRATA_API_KEY: apiKey };
    const listed = await runCli(['--server', server.url, 'project', 'list', '--json'], env, { cwd: dir });
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.stderr).not.toMatch(/STRATA_API_KEY/);
  });
});
