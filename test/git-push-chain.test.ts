// A long pushed chain is the project's history commit for commit. 150 commits — adds, edits, deletes,
// renames, exec-bit changes, a file deleted and added back — pushed in two parts into a project: the
// project's refs name git's commits, and the files of snapshots on both sides of the checkpoints
// (one every 64 snapshots) are git's trees. A push writes each snapshot's change set straight from
// the paths its commit wrote (sqlite-snapshots.ts importChain) instead of working it out by query,
// and falls back to the query when another writer came between; a wrong change set shows here.
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashBuffer } from '../engine/hash.js';
import { createIdGenerator } from '../engine/ids.js';
import { type LocalEngine, openLocalEngine } from '../engine/local.js';
import { systemClock } from '../engine/ports/world.js';
import type { Actor } from '../engine/types.js';
import { git } from './helpers/git.js';

const ACTOR: Actor = { id: 'ada', kind: 'user', name: 'Ada' };
const COMMITS = 150;
const FIRST_PART = 80;

let dir = '';
let repo = '';
let local: LocalEngine;
let projectId = '';

/** The history as fast-import streams: commits [from, to), the first of a later part continuing main. */
function history(from: number, to: number): Buffer {
  let seed = 7;
  const random = () => {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    return seed / 2147483648;
  };
  const live = new Map<string, boolean>(); // path -> executable
  const out: string[] = [];
  let mark = 0;
  for (let c = 0; c < to; c++) {
    const changes: string[] = [];
    const paths = [...live.keys()];
    const pick = () => paths[Math.floor(random() * paths.length)]!;
    const data = (path: string) => `${path} at commit ${c}\n${'x'.repeat(Math.floor(random() * 300))}`;
    const modify = (path: string, executable: boolean) => {
      live.set(path, executable);
      const body = data(path);
      changes.push(`M ${executable ? '100755' : '100644'} inline ${path}\ndata ${Buffer.byteLength(body)}\n${body}\n`);
    };
    if (c === 0) {
      for (let i = 0; i < 30; i++) modify(`src/m${i % 5}/f${i}.m`, false);
    } else {
      for (let k = 0; k < 3; k++) modify(pick(), live.get(pick()) ?? false);
      const roll = random();
      if (roll < 0.2 && paths.length > 10) {
        const gone = pick();
        live.delete(gone);
        changes.push(`D ${gone}\n`);
      } else if (roll < 0.35 && paths.length > 10) {
        const from = pick();
        const to = `moved/c${c}-${from.split('/').pop()}`;
        live.set(to, live.get(from)!);
        live.delete(from);
        changes.push(`R ${from} ${to}\n`);
      } else if (roll < 0.45) {
        const path = pick();
        modify(path, !live.get(path));
      } else {
        modify(`new/n${c}.py`, roll > 0.9);
      }
      // a file deleted in one commit and added back in a later one
      if (c === 40) {
        live.delete('src/m0/f0.m');
        changes.push('D src/m0/f0.m\n');
      }
      if (c === 90) modify('src/m0/f0.m', false);
    }
    if (c < from) continue;
    const message = `commit ${c}\n`;
    const when = 1_767_225_600 + c * 3600;
    out.push(`commit refs/heads/main\nmark :${++mark}\ncommitter Ada <ada@lab.example> ${when} +0000\ndata ${message.length}\n${message}`);
    if (c === from && from > 0) out.push('from refs/heads/main^0\n');
    out.push(...changes, '\n');
  }
  out.push('done\n');
  return Buffer.from(out.join(''));
}

/** `git fast-export` of what the project lacks, as `strata git push` sends it, into gitReceive. */
async function push(): Promise<void> {
  const refs = await local.engine.gitRefs(projectId);
  const range = refs.head === null ? ['main'] : ['main', `^${refs.head.commitId}`];
  const child = spawn('git', ['fast-export', '--use-done-feature', '--show-original-ids', '--reference-excluded-parents', ...range], {
    cwd: repo,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
  await local.engine.gitReceive({ projectId, actor: ACTOR, stream: child.stdout });
  expect(await exited).toBe(0);
}

/** path -> "mode size" of a commit's tree, and of a snapshot's entries. */
async function gitFiles(commit: string): Promise<Map<string, string>> {
  const files = new Map<string, string>();
  for (const line of (await git(repo, dir, ['ls-tree', '-r', '-l', commit])).toString().split('\n').filter(Boolean)) {
    const [meta, path] = line.split('\t') as [string, string];
    const [mode, , , size] = meta.split(/\s+/);
    files.set(path, `${mode} ${size}`);
  }
  return files;
}

async function snapshotFiles(snapshotId: string): Promise<Map<string, string>> {
  const files = new Map<string, string>();
  let cursor: string | undefined;
  do {
    const page = await local.engine.snapshotEntries({ projectId, snapshotId, limit: 1000, ...(cursor === undefined ? {} : { cursor }) });
    for (const entry of page.items) files.set(entry.path, `${entry.executable ? '100755' : '100644'} ${entry.size}`);
    cursor = page.nextCursor;
  } while (cursor !== undefined);
  return files;
}

async function allSnapshots(): Promise<Array<{ snapshotId: string; seq: number }>> {
  const out: Array<{ snapshotId: string; seq: number }> = [];
  let cursor: string | undefined;
  do {
    const page = await local.engine.listSnapshots({ projectId, limit: 100, ...(cursor === undefined ? {} : { cursor }) });
    out.push(...page.items);
    cursor = page.nextCursor;
  } while (cursor !== undefined);
  return out.sort((a, b) => a.seq - b.seq);
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'strata-push-chain-'));
  repo = join(dir, 'repo');
  await git(dir, dir, ['init', '-q', '-b', 'main', repo]);
  local = await openLocalEngine({ home: join(dir, 'home') });
  const orgId = createIdGenerator(systemClock).uuid();
  await local.repository.access.createOrganization({ orgId, name: 'lab', createdAt: new Date().toISOString() });
  projectId = (await local.engine.createProject({ orgId, name: 'pushed' })).projectId;
}, 30_000);

afterAll(async () => {
  await local?.close();
  await rm(dir, { recursive: true, force: true });
});

describe('a long pushed chain', () => {
  it('pushed in two parts, is git history commit for commit and tree for tree', async () => {
    await git(repo, dir, ['fast-import', '--quiet'], history(0, FIRST_PART));
    await push();
    await git(repo, dir, ['fast-import', '--quiet'], history(FIRST_PART, COMMITS));
    await push();

    const ids = (await git(repo, dir, ['rev-list', '--reverse', 'main'])).toString().trim().split('\n');
    expect(ids).toHaveLength(COMMITS);
    expect((await local.engine.gitRefs(projectId)).head?.commitId).toBe(ids[COMMITS - 1]);
    const snapshots = await allSnapshots();
    expect(snapshots).toHaveLength(COMMITS);
    // each side of the checkpoints (every 64), the first and last of each part, the re-added file
    for (const i of [0, 1, 39, 40, 63, 64, 65, 79, 80, 81, 90, 127, 128, 129, 149]) {
      expect(await snapshotFiles(snapshots[i]!.snapshotId), `snapshot ${i + 1}`).toEqual(await gitFiles(ids[i]!));
    }
    // the chain as the project exports it: a clone would have the same ids
    const refs = await local.engine.gitRefs(projectId);
    expect(refs.head).toMatchObject({ snapshotId: snapshots[COMMITS - 1]!.snapshotId, commitId: ids[COMMITS - 1] });
  });

  it('refuses a push as not fast-forward when a snapshot lands in the project while the push streams in', async () => {
    // git commits the project does not have yet, pushed by a stream that pauses half-way while
    // someone snapshots a change in the project: its chain moved on under the push.
    await git(repo, dir, ['fast-import', '--quiet'], history(COMMITS, COMMITS + 20));
    const tip = (await local.engine.gitRefs(projectId)).head!.commitId;
    const exported = await git(repo, dir, ['fast-export', '--use-done-feature', '--show-original-ids', '--reference-excluded-parents', 'main', `^${tip}`]);
    const before = (await allSnapshots()).length;
    async function* paused(): AsyncGenerator<Uint8Array> {
      yield exported.subarray(0, exported.length >> 1);
      await local.engine.writeFile({ projectId, path: 'meanwhile.txt', actor: ACTOR, content: Buffer.from('meanwhile\n') });
      await local.engine.createSnapshot({ projectId, actor: ACTOR, message: 'meanwhile' });
      yield exported.subarray(exported.length >> 1);
    }
    const error = await local.engine.gitReceive({ projectId, actor: ACTOR, stream: paused() }).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'GIT_NOT_FAST_FORWARD' });
    expect(await allSnapshots()).toHaveLength(before + 1); // the push added nothing
  });

  it("takes another writer's version into the snapshot when one came between the push's check and its commit", async () => {
    const before = (await allSnapshots()).length;
    // A capture lands after gitReceive checked the project was snapshotted, before its transaction:
    await local.engine.writeFile({ projectId, path: 'captured.txt', actor: ACTOR, content: Buffer.from('captured\n') });
    const ids = createIdGenerator(systemClock);
    const bytes = Buffer.from('pushed\n');
    const stored = await local.store.putBuffer(bytes);
    expect(stored.hash).toBe(hashBuffer(bytes));
    const timestamp = new Date().toISOString();
    await local.repository.snapshots.importChain(projectId, [
      {
        commits: [
          {
            record: {
              versionId: ids.uuid(),
              projectId,
              path: 'pushed.txt',
              contentHash: stored.hash,
              size: bytes.length,
              actor: ACTOR,
              timestamp,
              kind: 'import',
              restoredFrom: null,
              executable: false,
              symlink: false,
              dataset: false,
            },
            expectedCurrent: null,
          },
        ],
        snapshot: { snapshotId: ids.uuid(), projectId, message: 'pushed', actor: ACTOR, timestamp },
        tags: [],
      },
    ], (await local.repository.snapshots.tip(projectId))?.snapshotId ?? null);
    const snapshots = await allSnapshots();
    expect(snapshots).toHaveLength(before + 1);
    const files = await snapshotFiles(snapshots[before]!.snapshotId);
    expect(files.get('pushed.txt')).toBe('100644 7');
    expect(files.get('captured.txt')).toBe('100644 9');
    // ...and the snapshot after it still has both (the change set came from the versions)
    const next = await local.engine.createSnapshot({ projectId, actor: ACTOR, message: 'after' });
    const after = await snapshotFiles(next.snapshotId);
    expect([after.get('pushed.txt'), after.get('captured.txt')]).toEqual(['100644 7', '100644 9']);
  });
});
