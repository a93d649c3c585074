// While a page's dataset goes up, the small contents of the pages after it go up too
// (daemon/sync/upload-ahead.ts): a first sync's files captured after a big file no longer wait for
// its upload to end before their bytes leave (issue 38). Their records still wait; what goes ahead is
// verified and kept by a real server; the look-ahead ends with the datasets' upload, fails or not, and
// its own failure never fails the page whose datasets it waited for.
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Remote } from '../daemon/sync/remote.js';
import { uploadAheadWhile } from '../daemon/sync/upload-ahead.js';
import { alice, openTestEngine, type TestEngine, tempDir } from './helpers/world.js';
import { runCli, type ServerProcess, startServerProcess } from './helpers/server-process.js';

describe('small contents go up while a dataset does', () => {
  let t: TestEngine;
  let dir: Awaited<ReturnType<typeof tempDir>>;
  let server: ServerProcess;
  let remote: Remote;

  beforeEach(async () => {
    t = await openTestEngine();
    dir = await tempDir('strata-upload-ahead-');
    const home = join(dir.path, 'server');
    const boot = await runCli(['admin', 'bootstrap', '--home', home, '--json']);
    expect(boot.code, boot.stderr).toBe(0);
    const apiKey = (JSON.parse(boot.stdout) as { apiKey: string }).apiKey;
    server = await startServerProcess(home);
    const created = await runCli(['projects', 'create', 'p', '--json'], { STRATA_SERVER_URL: server.url, STRATA_API_KEY: apiKey });
    expect(created.code, created.stderr).toBe(0);
    remote = new Remote({ serverUrl: server.url, remoteProjectId: (JSON.parse(created.stdout) as { projectId: string }).projectId, apiKey });
  }, 60_000);

  afterEach(async () => {
    await server.stop();
    await t.dispose();
    await dir.cleanup();
  });

  const write = async (path: string, text: string) => (await t.engine.writeFile({ projectId: t.projectId, path, actor: alice, content: Buffer.from(text) })).version;

  it('sends the contents after the page while the datasets go up, including ones made meanwhile, and stops with them', async () => {
    const page = await write('big.bin', 'the page being pushed');
    const after = await Promise.all(Array.from({ length: 30 }, (_, i) => write(`later/f${i}.txt`, `file ${i}`)));
    const seq = (await t.engine.syncOutbox({ projectId: t.projectId, afterSeq: 0, limit: 1 })).lastSeq!;
    let finishDatasets!: () => void;
    const datasets = new Promise<void>((resolve) => {
      finishDatasets = resolve;
    });
    const deps = { engine: t.engine, store: t.store, projectId: t.projectId };
    const ahead = uploadAheadWhile(deps, remote, seq, datasets, new AbortController().signal);
    const hashes = after.map((version) => version.contentHash!);
    // Every later content reaches the server while "the dataset" is still going up.
    for (let deadline = Date.now() + 20_000; (await remote.missing(hashes)).length > 0; ) {
      expect(Date.now()).toBeLessThan(deadline);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    // A file captured meanwhile goes too; the page's own content (sent by the page) does not.
    const meanwhile = await write('later/new.txt', 'captured while the dataset went up');
    for (let deadline = Date.now() + 20_000; (await remote.missing([meanwhile.contentHash!])).length > 0; ) {
      expect(Date.now()).toBeLessThan(deadline);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(await remote.missing([page.contentHash!])).toStrictEqual([page.contentHash]);
    finishDatasets();
    expect(await ahead).toBeGreaterThan(0);
  }, 60_000);

  it('ends when the datasets fail, and sends nothing once they are done', async () => {
    await write('big.bin', 'the page being pushed');
    const later = await write('later/f.txt', 'later');
    const deps = { engine: t.engine, store: t.store, projectId: t.projectId };
    const failed = Promise.reject(new Error('the dataset upload failed'));
    failed.catch(() => undefined);
    // Settled before the look-ahead looks: nothing goes ahead, and the datasets' failure is not its own.
    expect(await uploadAheadWhile(deps, remote, 1, failed, new AbortController().signal)).toBe(0);
    expect(await remote.missing([later.contentHash!])).toStrictEqual([later.contentHash]);
  }, 60_000);

  it('a failure going ahead does not fail the page: it resolves with the datasets, having sent nothing', async () => {
    await write('big.bin', 'the page being pushed');
    const later = await write('later/f.txt', 'later');
    const deps = { engine: t.engine, store: t.store, projectId: t.projectId };
    // A key the server refuses: every request of the look-ahead fails.
    const refused = new Remote({ serverUrl: server.url, remoteProjectId: 'p', apiKey: 'not-a-key' });
    let finishDatasets!: () => void;
    const datasets = new Promise<void>((resolve) => {
      finishDatasets = resolve;
    });
    const ahead = uploadAheadWhile(deps, refused, 1, datasets, new AbortController().signal);
    // Refused at once; the datasets end later (their page then pushes its records).
    await expect(refused.missing([later.contentHash!])).rejects.toThrow();
    finishDatasets();
    expect(await ahead).toBe(0);
    expect(await remote.missing([later.contentHash!])).toStrictEqual([later.contentHash]);
  }, 60_000);
});
