import type { MetadataRepository, VersionCommit, VersionCommitResult } from './ports/metadata-repository.js';

/**
 * Group commit for version records. Every commit costs the repository one durable transaction (an
 * fsync of the SQLite WAL, ~1–2 ms here), which would cap single-record commits at under 1,000
 * versions/s. Records submitted in the same event-loop turn, or while a flush is running, share one
 * transaction; each submitter still learns its own result and is acknowledged only after the
 * transaction holding its record is durable. Flushes run one at a time, so commit order is
 * submission order.
 */
export interface CommitBatcher {
  submit(commit: VersionCommit): Promise<VersionCommitResult>;
  /** An all-or-nothing group (rename, snapshot restore): committed alone, in order with the rest. */
  submitAtomic(commits: VersionCommit[]): Promise<VersionCommitResult[]>;
  /** resolves when everything submitted so far is committed */
  drain(): Promise<void>;
}

interface Pending {
  commits: VersionCommit[];
  atomic: boolean;
  resolve: (results: VersionCommitResult[]) => void;
  reject: (error: unknown) => void;
}

export const MAX_BATCH = 2000;

export function createCommitBatcher(
  repository: MetadataRepository,
  onCommitted: (commits: VersionCommit[], results: VersionCommitResult[]) => void,
): CommitBatcher {
  let queue: Pending[] = [];
  let flushing: Promise<void> | null = null;
  let scheduled = false;

  function schedule(): void {
    if (scheduled || flushing) return;
    scheduled = true;
    setImmediate(() => {
      scheduled = false;
      flushing = flush().finally(() => {
        flushing = null;
        if (queue.length > 0) schedule();
      });
    });
  }

  async function flush(): Promise<void> {
    while (queue.length > 0) {
      const group = takeGroup();
      const commits = group.flatMap((p) => p.commits);
      const atomic = group[0]!.atomic;
      // Results come back for `commits`, then for each latecomer taken: all of them, in that order.
      const committed = [...commits];
      // What queued while the transaction waited for its projects' lock joins it (Postgres: another
      // replica was committing); without this, replicas sharing a project commit half-size batches.
      const latecomers = (projects: ReadonlySet<string>): VersionCommit[] => {
        const late = takeLatecomers(projects, MAX_BATCH - committed.length);
        group.push(...late);
        const lateCommits = late.flatMap((p) => p.commits);
        committed.push(...lateCommits);
        return lateCommits;
      };
      try {
        const results = await repository.versions.commit(commits, atomic ? { atomic } : { latecomers });
        onCommitted(committed, results);
        let offset = 0;
        for (const pending of group) {
          pending.resolve(results.slice(offset, offset + pending.commits.length));
          offset += pending.commits.length;
        }
      } catch (error) {
        for (const pending of group) pending.reject(error);
      }
    }
  }

  /** The queue's leading plain submissions, up to `room` records, whose every record is of `projects`. */
  function takeLatecomers(projects: ReadonlySet<string>, room: number): Pending[] {
    let count = 0;
    let end = 0;
    while (end < queue.length) {
      const pending = queue[end]!;
      if (pending.atomic || count + pending.commits.length > room) break;
      if (!pending.commits.every((c) => projects.has(c.record.projectId))) break;
      count += pending.commits.length;
      end += 1;
    }
    const late = queue.slice(0, end);
    queue = queue.slice(end);
    return late;
  }

  /** Consecutive plain submissions share a transaction; an atomic group goes alone. */
  function takeGroup(): Pending[] {
    const first = queue[0]!;
    if (first.atomic) {
      queue = queue.slice(1);
      return [first];
    }
    let count = 0;
    let end = 0;
    while (end < queue.length && !queue[end]!.atomic && count < MAX_BATCH) {
      count += queue[end]!.commits.length;
      end += 1;
    }
    const group = queue.slice(0, end);
    queue = queue.slice(end);
    return group;
  }

  function enqueue(commits: VersionCommit[], atomic: boolean): Promise<VersionCommitResult[]> {
    return new Promise((resolve, reject) => {
      queue.push({ commits, atomic, resolve, reject });
      schedule();
    });
  }

  return {
    async submit(commit) {
      const [result] = await enqueue([commit], false);
      return result!;
    },
    submitAtomic(commits) {
      return enqueue(commits, true);
    },
    async drain() {
      while (queue.length > 0 || flushing || scheduled) {
        await (flushing ?? new Promise((r) => setImmediate(r)));
      }
    },
  };
}
