import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createIdGenerator } from '../../engine/ids.js';
import { type LocalEngine, openLocalEngine } from '../../engine/local.js';
import { type FrozenClock, frozenClock } from './clock.js';
import type { Actor } from '../../engine/types.js';

export { type FrozenClock, frozenClock };

export async function tempDir(prefix = 'strata-test-'): Promise<{ path: string; cleanup: () => Promise<void> }> {
  const path = await mkdtemp(join(tmpdir(), prefix));
  return { path, cleanup: () => rm(path, { recursive: true, force: true }) };
}

export const alice: Actor = { id: 'user-alice', kind: 'user', name: 'Alice' };
export const bob: Actor = { id: 'user-bob', kind: 'user', name: 'Bob' };

export interface TestEngine extends LocalEngine {
  clock: FrozenClock;
  orgId: string;
  projectId: string;
  dispose(): Promise<void>;
}

/** A real local engine (SQLite + local store) in a temp dir, with a frozen clock and one project. */
export async function openTestEngine(options: { gcGraceMs?: number } = {}): Promise<TestEngine> {
  const dir = await tempDir();
  const clock = frozenClock();
  const local = await openLocalEngine({ home: dir.path, clock, ids: createIdGenerator(clock), gcGraceMs: options.gcGraceMs ?? 0 });
  const orgId = 'org-test';
  await local.repository.access.createOrganization({ orgId, name: 'Test org', createdAt: new Date(clock.now()).toISOString() });
  const project = await local.engine.createProject({ orgId, name: 'thesis' });
  return {
    ...local,
    clock,
    orgId,
    projectId: project.projectId,
    async dispose() {
      try {
        await local.close();
      } finally {
        await dir.cleanup();
      }
    },
  };
}

export async function readAll(stream: AsyncIterable<Uint8Array>): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(Buffer.from(chunk));
  return Buffer.concat(chunks);
}

export async function countObjects(t: { store: LocalEngine['store'] }): Promise<number> {
  let n = 0;
  for await (const _ of t.store.list()) n += 1;
  return n;
}
