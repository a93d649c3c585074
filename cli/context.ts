// What every command action needs, built from the global flags once per invocation: output mode,
// the resolved server/credentials/project, and an API client. Resolution is lazy so that commands
// that never talk to a server (serve, admin bootstrap, local fsck) do not fail on a bad config.

import type { Command } from 'commander';
import { type ApiClient, createClient } from './client.js';
import { type GlobalFlags, type ResolvedTarget, resolveTarget } from './config.js';
import { loadLogin, tokenSourceFor } from './credentials.js';
import { CliError, EXIT } from './errors.js';
import { toProjectPath } from './file-paths.js';
import { refuseIfElsewhere } from './home-elsewhere.js';
import { createOutput, type Output } from './output.js';
import { CLI_VERSION } from './version.js';

export interface CommandContext {
  readonly flags: GlobalFlags;
  readonly output: Output;
  target(): ResolvedTarget;
  /** A client with credentials; NO_CREDENTIALS (exit 5) when no API key is configured. */
  client(): ApiClient;
  /** The target project id; NO_PROJECT (exit 2) when none is configured. */
  projectId(): string;
  /** `/v1/projects/{id}` + suffix, id URL-encoded */
  projectPath(suffix: string): string;
  /** A path argument as a project path: relative to the working directory in a project directory. */
  filePath(arg: string): string;
}

export function contextFor(command: Command): CommandContext {
  const flags = command.optsWithGlobals<GlobalFlags>();
  const output = createOutput(flags.json === true);
  let target: ResolvedTarget | undefined;
  let client: ApiClient | undefined;

  const ctx: CommandContext = {
    flags,
    output,
    target() {
      if (target === undefined) {
        target = resolveTarget(flags);
        if (target.envOverridden !== undefined) {
          output.warn(
            `inside the project in ${target.projectDir}, which uses its own project and daemon: ${target.envOverridden.join(', ')} ${target.envOverridden.length === 1 ? 'is' : 'are'} not used here (pass --project/--server to choose another)`,
          );
        }
      }
      return target;
    },
    client() {
      if (client) return client;
      const resolved = ctx.target();
      if (resolved.daemonDown !== undefined) {
        const { home, dir } = resolved.daemonDown;
        // On another node of a cluster the daemon runs all the same, on the node that holds the home.
        refuseIfElsewhere(home, 'this command');
        throw new CliError('DAEMON_NOT_RUNNING', `the Strata daemon of ${home} (the home of the project in ${dir}) is not running: start it with \`strata daemon\` (or \`strata watch ${dir}\`)`, {
          exitCode: EXIT.unreachable,
        });
      }
      if (!resolved.apiKey) {
        // No key: a person who ran `strata login` for this server uses their token.
        if (loadLogin(resolved.serverUrl) !== null) {
          client = createClient({ serverUrl: resolved.serverUrl, apiKey: undefined, tokenSource: tokenSourceFor(resolved.serverUrl), version: CLI_VERSION });
          return client;
        }
        if (resolved.notLocal !== undefined) {
          // Not a credentials problem: the project is no project of this machine, and no server is named.
          const { projectId, home } = resolved.notLocal;
          throw new CliError(
            'PROJECT_NOT_FOUND',
            `project ${projectId} is not a project of this machine's Strata home ${home}, and no server is configured: run the command inside the project's directory, or set STRATA_HOME to the home that has it; for a team server's project, pass --server URL and run \`strata login\` (or set STRATA_API_KEY)`,
            { exitCode: EXIT.notFound, details: { projectId, home } },
          );
        }
        throw new CliError(
          'NO_CREDENTIALS',
          'no credentials: run `strata login`, or set STRATA_API_KEY (or "apiKey" in ' +
            resolved.configPath +
            '); `strata admin bootstrap` creates the first key' +
            (resolved.projectDir === undefined && resolved.serverUrlSource === 'default' ? ' (not in a project directory: inside one, commands use its daemon)' : ''),
          { exitCode: EXIT.auth },
        );
      }
      if (flags.apiKey) {
        output.warn('--api-key puts the key in your shell history and process list; prefer STRATA_API_KEY');
      }
      client = createClient({ serverUrl: resolved.serverUrl, apiKey: resolved.apiKey, version: CLI_VERSION });
      return client;
    },
    projectId() {
      const resolved = ctx.target();
      if (!resolved.projectId) {
        throw new CliError(
          'NO_PROJECT',
          'no project: pass --project ID, set STRATA_PROJECT_ID, or add "projectId" to ' + resolved.configPath,
          { exitCode: EXIT.usage },
        );
      }
      return resolved.projectId;
    },
    projectPath(suffix) {
      return `/v1/projects/${encodeURIComponent(ctx.projectId())}${suffix}`;
    },
    filePath(arg) {
      return toProjectPath(arg, ctx.target().projectDir);
    },
  };
  return ctx;
}

/** Parses a non-negative integer option/argument; a usage error (exit 2) names the field. */
export function parseCount(raw: string | undefined, field: string, options: { min?: number; max?: number } = {}): number | undefined {
  if (raw === undefined) return undefined;
  const min = options.min ?? 0;
  if (!/^\d+$/.test(raw)) {
    throw new CliError('USAGE', `${field} must be a whole number, got '${raw}'`, { exitCode: EXIT.usage, details: { field } });
  }
  const value = Number(raw);
  if (!Number.isSafeInteger(value) || value < min || (options.max !== undefined && value > options.max)) {
    const range = options.max === undefined ? `>= ${min}` : `between ${min} and ${options.max}`;
    throw new CliError('USAGE', `${field} must be ${range}, got '${raw}'`, { exitCode: EXIT.usage, details: { field } });
  }
  return value;
}
