import { chmod, mkdir, readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { isNoRoom } from './errors.js';
import { createEngine } from './create-engine.js';
import type { Engine, EngineDeps } from './engine-api.js';
import { createIdGenerator } from './ids.js';
import type { ContentStore } from './ports/content-store.js';
import type { MetadataRepository } from './ports/metadata-repository.js';
import { type Clock, type IdGenerator, systemClock } from './ports/world.js';
import { createLocalContentStore } from './storage/local-content-store.js';
import { releaseReserve } from './storage/local-content-store-reserve.js';
import { openSqliteRepository } from './storage/sqlite-repository.js';

export interface LocalEngine {
  engine: Engine;
  repository: MetadataRepository;
  store: ContentStore;
  clock: Clock;
  home: string;
  close(): Promise<void>;
}

/** Where things live under a Strata home (the embedded default: SQLite + a local object directory). */
export function homeLayout(home: string) {
  return {
    metadata: join(home, 'metadata.sqlite'),
    store: join(home, 'store'),
    secrets: join(home, 'secrets'),
  };
}

export interface EngineOptions {
  clock?: Clock;
  ids?: IdGenerator;
  gcGraceMs?: number;
  defaultPolicy?: EngineDeps['defaultPolicy'];
  /** a host's view of the repository the engine uses (server metrics count its commits) */
  wrapRepository?: (repository: MetadataRepository) => MetadataRepository;
}

/**
 * Opens (creating if needed) the embedded default engine in `home`. `migrate: false` (fsck, gc)
 * creates nothing: a home without its metadata database at this schema version is refused first.
 */
export async function openLocalEngine(options: EngineOptions & { home: string; migrate?: boolean }): Promise<LocalEngine> {
  try {
    return await openLocalEngineOnce(options);
  } catch (error) {
    // On a full disk SQLite cannot create its log or shared-memory file (SQLITE_IOERR_SHMSIZE): the
    // daemon did not start and `strata gc --home` could not open the home it was meant to relieve. The
    // store's reserve (local-content-store-reserve.ts) makes that room; gc makes it again afterwards.
    const cause = (error as { cause?: { code?: unknown } }).cause;
    const full = isNoRoom(error) || cause?.code === 'SQLITE_IOERR_SHMSIZE';
    if (!full || !(await releaseReserve(homeLayout(options.home).store).catch(() => false))) throw error;
    return openLocalEngineOnce(options);
  }
}

async function openLocalEngineOnce(options: EngineOptions & { home: string; migrate?: boolean }): Promise<LocalEngine> {
  const layout = homeLayout(options.home);
  const existing = options.migrate === false ? openSqliteRepository({ file: layout.metadata, migrate: false }) : undefined;
  const clock = options.clock ?? systemClock;
  let store: ContentStore;
  try {
    await mkdir(options.home, { recursive: true, mode: 0o700 });
    if (options.migrate !== false) await makeFreshHomePrivate(options.home);
    store = await createLocalContentStore({ root: layout.store, clock });
  } catch (error) {
    await existing?.close();
    throw error;
  }
  let repository: MetadataRepository;
  try {
    repository = existing ?? openSqliteRepository({ file: layout.metadata });
  } catch (error) {
    await store.close();
    throw error;
  }
  return engineOn({ repository, store, home: options.home }, { ...options, clock });
}

/**
 * A home is its owner's alone (its store holds every version of every file, whatever their modes in the
 * project): one Strata creates is 0700. One the user made beforehand (`mkdir /scratch/me/strata`, then
 * `--home` or STRATA_HOME) kept its 0755, and its store and database (0644) were readable by every user
 * of the machine. Still fresh, it is Strata's to set; a home already in use keeps what its owner chose.
 */
async function makeFreshHomePrivate(home: string): Promise<void> {
  const info = await stat(home);
  if ((info.mode & 0o077) === 0 || info.uid !== process.getuid?.()) return;
  // Fresh: no metadata database yet, and nothing in it but what Strata made on the way here (the
  // daemon's lock, daemon.json, the secrets).
  if ((await readdir(home)).some((name) => !FRESH_HOME_ENTRIES.has(name))) return;
  await chmod(home, 0o700);
}

const FRESH_HOME_ENTRIES = new Set(['daemon', 'daemon.json', 'secrets', 'store', 'server.lock', 'home.lock']);

/**
 * An engine over storage the caller opened (the server's Postgres and S3, server/server-storage.ts);
 * closing the engine closes both.
 */
export function engineOn(storage: { repository: MetadataRepository; store: ContentStore; home: string }, options: EngineOptions): LocalEngine {
  const clock = options.clock ?? systemClock;
  const repository = options.wrapRepository === undefined ? storage.repository : options.wrapRepository(storage.repository);
  const deps: EngineDeps = { store: storage.store, repository, clock, ids: options.ids ?? createIdGenerator(clock) };
  if (options.gcGraceMs !== undefined) deps.gcGraceMs = options.gcGraceMs;
  if (options.defaultPolicy !== undefined) deps.defaultPolicy = options.defaultPolicy;
  const engine = createEngine(deps);
  return { engine, repository, store: storage.store, clock, home: storage.home, close: () => engine.close() };
}
