// One push sent twice at once (a CI retry, or the same push through two replicas): both requests
// planned it on the project as it was, so each would pass its records' preconditions once the other's
// records were read. importChain applies a chain only on the tip it was planned on; the request that
// loses is judged again against the chain as it is now, and finds every commit already there.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createIdGenerator } from '../engine/ids.js';
import { type LocalEngine, openLocalEngine } from '../engine/local.js';
import type { MetadataRepository } from '../engine/ports/metadata-repository.js';
import { systemClock } from '../engine/ports/world.js';
import type { Actor } from '../engine/types.js';

const ACTOR: Actor = { id: 'ada', kind: 'user', name: 'Ada' };

/** A fast-import stream of three commits of model.py, as `git fast-export` writes one. */
function stream(): Buffer {
  const out: string[] = [];
  for (let c = 1; c <= 3; c += 1) {
    const body = `print(${c})\n`;
    out.push(
      `commit refs/heads/main\nmark :${c}\nauthor Ada <ada@lab.example> ${1_700_000_000 + c} +0000\ncommitter Ada <ada@lab.example> ${1_700_000_000 + c} +0000\ndata 9\ncommit ${c}\n`,
      c > 1 ? `from :${c - 1}\n` : '',
      `M 100644 inline model.py\ndata ${Buffer.byteLength(body)}\n${body}\n`,
    );
  }
  out.push('done\n');
  return Buffer.from(out.join(''));
}

async function* once(bytes: Buffer): AsyncGenerator<Uint8Array> {
  yield bytes;
}

let dir = '';
let local: LocalEngine;
/** Holds the first two importChain calls until both have come, then lets them go in arrival order. */
let arrived: Array<() => void> = [];

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'strata-push-race-'));
  const wrapRepository = (repository: MetadataRepository): MetadataRepository => {
    const snapshots = repository.snapshots;
    const importChain: typeof snapshots.importChain = async (...args) => {
      if (arrived.length < 2) {
        await new Promise<void>((resolve) => {
          arrived.push(resolve);
          if (arrived.length === 2) for (const release of arrived) release();
        });
      }
      return snapshots.importChain.apply(snapshots, args);
    };
    return { ...repository, snapshots: Object.assign(Object.create(snapshots) as typeof snapshots, { importChain }) };
  };
  local = await openLocalEngine({ home: dir, clock: systemClock, ids: createIdGenerator(systemClock), wrapRepository });
}, 60_000);

afterAll(async () => {
  await local?.close();
  if (dir !== '') await rm(dir, { recursive: true, force: true });
});

describe('the same push twice at once', () => {
  it('is applied once: one request applies its three commits, the other finds them there', async () => {
    const orgId = 'org-race';
    await local.repository.access.createOrganization({ orgId, name: 'Race', createdAt: new Date().toISOString() });
    const { projectId } = await local.engine.createProject({ orgId, name: 'raced' });
    arrived = [];
    const results = await Promise.all([1, 2].map(() => local.engine.gitReceive({ projectId, actor: ACTOR, stream: once(stream()) })));
    expect(arrived).toHaveLength(2);
    const appliedCounts = results.map((r) => r.applied.length).sort();
    expect(appliedCounts).toStrictEqual([0, 3]);
    const loser = results.find((r) => r.applied.length === 0)!;
    const winner = results.find((r) => r.applied.length === 3)!;
    expect(loser.alreadyPresent).toBe(3);
    expect(loser.head).toStrictEqual(winner.head);
    const snapshots = await local.engine.listSnapshots({ projectId, limit: 10 });
    expect(snapshots.items).toHaveLength(3);
    expect((await local.engine.history({ projectId, path: 'model.py', limit: 10 })).items).toHaveLength(3);
  });
});
