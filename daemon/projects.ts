// Binding a directory to a project (`strata init`, `POST /v1/daemon/projects`): create the project in
// the home's organization, record it in daemon.json, and — in watch mode — write
// `DIR/.strata/project.json` so CLI commands run inside DIR find it the way git finds its repository.

import { constants } from 'node:fs';
import { access, mkdir, readdir, readFile, realpath, stat } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import type { Engine } from '../engine/engine-api.js';
import { writeFileAtomic } from './atomic-file.js';
import { openBeneath, throughLink } from './beneath.js';
import { diskFullError, isNoRoom, isStrataError, StrataError } from '../engine/errors.js';
import { type DaemonConfig, type DaemonProjectConfig, readDaemonConfig, writeDaemonConfig } from './config.js';
import type { ProjectMode } from './host.js';
import type { SyncLink } from './sync/link.js';

export const PROJECT_FILE = join('.strata', 'project.json');
/** `*` ignores everything in `.strata/`, itself included: `git status` in a project stays quiet. */
export const STRATA_GITIGNORE = join('.strata', '.gitignore');
export const STRATA_GITIGNORE_TEXT = '*\n';

export interface ProjectFile {
  projectId: string;
  home: string;
}

export interface RegisterInput {
  dir: string;
  mode: ProjectMode;
  name?: string;
  /** link the project to a server project (`strata init --server`, `strata clone`) */
  sync?: SyncLink;
  /** the directory must be empty (`strata clone`: the server's files land there) */
  requireEmpty?: boolean;
  /**
   * Mount mode over a directory that has files (`strata mount DIR --import`): they are imported, the
   * mount goes over them, and unmounting writes the project's tree back there (`inPlace`).
   */
  import?: boolean;
}

export interface RegisteredProject extends DaemonProjectConfig {
  name: string;
  /** false when DIR was already bound (init is idempotent) */
  created: boolean;
}

export interface Registrar {
  home: string;
  engine: Engine;
  orgId: string;
  /** the daemon's in-memory config (the daemon owns daemon.json while it runs) */
  config(): DaemonConfig;
  saveConfig(config: DaemonConfig): Promise<void>;
}

/** A registrar for a home no daemon is running on (the CLI, in-process). */
export function fileRegistrar(home: string, engine: Engine, orgId: string): Registrar {
  return { home, engine, orgId, config: () => readDaemonConfig(home), saveConfig: (config) => writeDaemonConfig(home, config) };
}

function taken(dir: string, other: DaemonProjectConfig, reason: string): StrataError {
  return new StrataError('PROJECT_DIR_TAKEN', {
    message: `${dir} ${reason} ${other.dir} (project ${other.projectId}, ${other.mode} mode)`,
    details: { dir, projectId: other.projectId, projectDir: other.dir, mode: other.mode },
  });
}

const inside = (child: string, parent: string) => child === parent || child.startsWith(parent === '/' ? '/' : `${parent}/`);

export async function readProjectFile(dir: string): Promise<ProjectFile | null> {
  try {
    const parsed = JSON.parse(await readFile(join(dir, PROJECT_FILE), 'utf8')) as Partial<ProjectFile>;
    return typeof parsed.projectId === 'string' && typeof parsed.home === 'string' ? { projectId: parsed.projectId, home: parsed.home } : null;
  } catch {
    return null;
  }
}

async function assertStrataDirWritable(dir: string): Promise<void> {
  const strata = await openBeneath(dir, dirname(PROJECT_FILE), { create: false });
  if (strata.kind === 'dir') await strata.dir.close();
  if (strata.kind === 'link') throw throughLink(PROJECT_FILE, strata.at);
  if (strata.kind === 'file') throw new StrataError('INVALID_ARGUMENT', { message: `${join(dir, strata.at)} is not a directory`, details: { field: 'dir' } });
  // A directory of another user's (a colleague's, on a shared workstation) failed only when
  // .strata/project.json was written, after the project was created: "Internal error", and one more
  // project without a directory in the home at each try.
  const target = strata.kind === 'dir' ? join(dir, dirname(PROJECT_FILE)) : dir;
  try {
    await access(target, constants.W_OK);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EACCES' && (error as NodeJS.ErrnoException).code !== 'EPERM') throw error;
    throw new StrataError('FORBIDDEN', {
      message: `${target} is not writable for this user: a watched directory needs ${PROJECT_FILE} written there (a directory of another user's is theirs to bind)`,
      details: { dir, path: target },
    });
  }
}

/** Written through `.strata` opened without following a link (beneath.ts): a `.strata` link (an unpacked archive's) is refused. */
async function writeProjectFile(dir: string, content: ProjectFile): Promise<void> {
  const strata = await openBeneath(dir, dirname(PROJECT_FILE), { create: true });
  if (strata.kind !== 'dir') {
    if (strata.kind === 'link') throw throughLink(PROJECT_FILE, strata.at);
    throw new StrataError('INVALID_ARGUMENT', { message: `${join(dir, strata.at)} is not a directory`, details: { field: 'dir' } });
  }
  try {
    await writeUnlessSame(strata.dir.ownEntry(basename(PROJECT_FILE)), `${JSON.stringify(content, null, 2)}\n`);
    // git (a checkout that is also a Strata project) ignores `.strata/` by itself, instead of showing it untracked.
    await writeUnlessSame(strata.dir.ownEntry(basename(STRATA_GITIGNORE)), STRATA_GITIGNORE_TEXT);
  } catch (error) {
    if (!isNoRoom(error)) throw error;
    throw diskFullError(`${dir} is on a full disk: ${PROJECT_FILE} could not be written`, error, { dir });
  } finally {
    await strata.dir.close();
  }
}

/**
 * Binding a directory again (`strata init DIR --server` after the server refused the key) rewrote
 * these files unchanged: on a full disk that failed the whole request (sync model seed 47003).
 */
async function writeUnlessSame(file: string, text: string): Promise<void> {
  if ((await readFile(file, 'utf8').catch(() => null)) === text) return;
  await writeFileAtomic(file, text, 0o644);
}

/**
 * One home keeps one local copy of a server project: two local projects linked to the same remote one
 * would both sync it through the home's one sync state for that link (they collided in it:
 * SQLITE_CONSTRAINT_UNIQUE) and each would pull the other's changes back as its own.
 */
function assertNotLinkedElsewhere(projects: readonly DaemonProjectConfig[], link: NonNullable<RegisterInput['sync']>, self: DaemonProjectConfig | null): void {
  const twin = projects.find((p) => p !== self && p.sync !== undefined && p.sync.server === link.server && p.sync.remoteProjectId === link.remoteProjectId);
  if (twin === undefined) return;
  throw new StrataError('PROJECT_ALREADY_LINKED', {
    message: `project ${link.remoteProjectId} on ${link.server} is already on this machine, at ${twin.dir}: use that directory, or another Strata home (--home) for a second copy`,
    details: { dir: twin.dir, server: link.server, remoteProjectId: link.remoteProjectId },
  });
}

export async function registerProject(registrar: Registrar, input: RegisterInput): Promise<RegisteredProject> {
  const { home, engine } = registrar;
  await mkdir(resolve(input.dir), { recursive: true });
  const dir = await realpath(resolve(input.dir));
  const realHome = await realpath(home).catch(() => resolve(home));
  if (dir === '/' || inside(dir, realHome) || inside(realHome, dir)) {
    throw new StrataError('INVALID_ARGUMENT', {
      message: `${dir} cannot be a project directory: it ${dir === '/' ? 'is the root' : 'overlaps the Strata home'} (${realHome})`,
      details: { field: 'dir', dir },
    });
  }
  const config = registrar.config();
  const same = config.projects.find((p) => p.dir === dir);
  if (same) {
    if (same.mode === 'watch' && input.mode === 'mount' && input.import === true) {
      // A watched directory holds the project's files, and its index says which version each one is:
      // the in-place mount goes over it from there (importing only what changed since).
      const { unmounted: _, ...rest } = same;
      const switched: DaemonProjectConfig = { ...rest, mode: 'mount', inPlace: true };
      await registrar.saveConfig({ ...config, projects: config.projects.map((p) => (p === same ? switched : p)) });
      const project = await engine.getProject(same.projectId);
      return { ...switched, name: project.name, created: false };
    }
    if (same.mode !== input.mode) {
      // Switching would strand one side: a mount hides the files of the directory it covers, and a
      // watched directory does not hold what was written through a mount.
      const error = taken(dir, same, 'is already bound:');
      const how =
        same.mode === 'watch'
          ? `it is versioned as an ordinary directory (\`strata watch ${dir}\`); to work on it through FUSE, \`strata mount --import ${dir}\` mounts over it (its files stay in place)`
          : `its files live in the mount (\`strata mount ${dir}\`); to watch an ordinary directory, use another one`;
      throw new StrataError('PROJECT_DIR_TAKEN', { message: `${error.message}: ${how}`, details: error.details });
    }
    const project = await engine.getProject(same.projectId);
    if (same.mode === 'watch') await writeProjectFile(dir, { projectId: same.projectId, home });
    const toInPlace = same.mode === 'mount' && input.import === true && same.inPlace !== true;
    if (same.unmounted === true || toInPlace) {
      // `strata mount DIR` after `strata unmount DIR`: served again (an in-place one imports what
      // changed meanwhile). `--import` on a mount project whose files live only in Strata: what the
      // directory holds now is imported too, and from now on unmounting leaves the files in place.
      const { unmounted: _, ...mounted } = same;
      const next: DaemonProjectConfig = toInPlace ? { ...mounted, inPlace: true } : mounted;
      await registrar.saveConfig({ ...config, projects: config.projects.map((p) => (p === same ? next : p)) });
      return { ...next, name: project.name, created: false };
    }
    if (input.sync !== undefined && !sameLink(same.sync, input.sync)) {
      assertNotLinkedElsewhere(config.projects, input.sync, same);
      if (same.sync !== undefined && (same.sync.server !== input.sync.server || same.sync.remoteProjectId !== input.sync.remoteProjectId)) {
        throw new StrataError('PROJECT_ALREADY_LINKED', {
          message: `${dir} is already linked to project ${same.sync.remoteProjectId} on ${same.sync.server}`,
          details: { dir, server: same.sync.server, remoteProjectId: same.sync.remoteProjectId },
        });
      }
      // An existing project linked now: its history is pushed, the server's pulled (a merge).
      const linked: DaemonProjectConfig = { ...same, sync: input.sync };
      await registrar.saveConfig({ ...config, projects: config.projects.map((p) => (p === same ? linked : p)) });
      return { ...linked, name: project.name, created: false };
    }
    return { ...same, name: project.name, created: false };
  }
  for (const other of config.projects) {
    if (inside(dir, other.dir)) throw taken(dir, other, 'is inside the project directory');
    if (inside(other.dir, dir)) throw taken(dir, other, 'contains the project directory');
  }
  if (input.sync !== undefined) assertNotLinkedElsewhere(config.projects, input.sync, null);
  // Checked before anything is bound: a mount over files would hide them (the mount refuses to start),
  // and a binding that can never start would stand in the way of `strata watch DIR`.
  const inPlace = input.mode === 'mount' && input.import === true;
  if ((input.mode === 'mount' && !inPlace) || input.requireEmpty === true) await assertEmptyDir(dir);

  // Refused before anything is created: .strata/project.json is never written through a link.
  if (input.mode === 'watch' || inPlace) await assertStrataDirWritable(dir);

  // A directory that was bound before (daemon.json lost or edited): keep its project and history.
  let projectId: string | null = null;
  let name = input.name ?? basename(dir);
  const previous = await readProjectFile(dir);
  // Its own home's daemon may be versioning it: two daemons over one directory would fight (every save
  // versioned twice, in two homes, and the CLI in the directory sent to the newer one only). A watch
  // binding was not refused: it rewrote .strata/project.json and both daemons went on watching. For a
  // watch binding, a home that is gone (ENOENT) no longer holds it; one we cannot read (another user's) does.
  if (previous && (await realpath(previous.home).catch(() => previous.home)) !== realHome && (inPlace || (input.mode === 'watch' && (await homeExists(previous.home))))) {
    throw new StrataError('PROJECT_DIR_TAKEN', {
      message: `${dir} belongs to project ${previous.projectId} of another Strata home (${previous.home}, per ${join(dir, PROJECT_FILE)}): it is not ${inPlace ? 'imported' : 'bound'} here (use that home, or remove ${join(dir, PROJECT_FILE)} if that home's daemon no longer versions it)`,
      details: { dir, projectId: previous.projectId, home: previous.home },
    });
  }
  if (previous && (await realpath(previous.home).catch(() => previous.home)) === realHome) {
    try {
      const project = await engine.getProject(previous.projectId);
      projectId = project.projectId;
      name = project.name;
    } catch (error) {
      if (!isStrataError(error, 'PROJECT_NOT_FOUND')) throw error;
    }
  }
  if (projectId === null) projectId = (await engine.createProject({ orgId: registrar.orgId, name })).projectId;

  const entry: DaemonProjectConfig = {
    projectId,
    dir,
    mode: input.mode,
    ...(input.sync === undefined ? {} : { sync: input.sync }),
    ...(inPlace ? { inPlace: true } : {}),
  };
  // In mount mode the mount shows this file itself; writing it under the mount point would hide it.
  if (input.mode === 'watch') await writeProjectFile(dir, { projectId, home });
  await registrar.saveConfig({ ...config, projects: [...config.projects, entry] });
  return { ...entry, name, created: true };
}

/** Whether a home named by a project file is still there: only "no such file" says it is gone. */
async function homeExists(home: string): Promise<boolean> {
  try {
    await stat(home);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code !== 'ENOENT' && (error as NodeJS.ErrnoException).code !== 'ENOTDIR';
  }
}

const sameLink = (a: SyncLink | undefined, b: SyncLink) =>
  a !== undefined && a.server === b.server && a.remoteProjectId === b.remoteProjectId && a.workstation === b.workstation;

/** A mount point must be empty (or missing: it is created); `.strata` alone is allowed. */
export async function assertEmptyDir(dir: string): Promise<void> {
  let info: Awaited<ReturnType<typeof stat>>;
  try {
    info = await stat(dir);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    await mkdir(dir, { recursive: true });
    return;
  }
  if (!info.isDirectory()) throw new StrataError('INVALID_ARGUMENT', { message: `${dir} is not a directory`, details: { field: 'dir' } });
  const names = (await readdir(dir)).filter((name) => name !== '.strata');
  if (names.length > 0) {
    throw new StrataError('INVALID_ARGUMENT', {
      message: `${dir} is not empty: mounting would hide its ${names.length} entr${names.length === 1 ? 'y' : 'ies'} (\`strata mount --import ${dir}\` imports them and mounts over them, leaving them in place at unmount; \`strata watch\` versions the directory as it is)`,
      details: { field: 'dir', entries: names.length, flag: '--import' },
    });
  }
}

