// The command tree. Global options (--server, --api-key, --project, --json) are accepted anywhere on
// the line (`strata ls --json` and `strata --json ls` are the same), so no subcommand may reuse their
// names, nor `--version` (which is why `strata --version` is handled before commander, in main.ts).

import { Command } from 'commander';
import { registerAdminCommands } from './commands/admin.js';
import { registerCheckoutCommand } from './commands/checkout.js';
import { registerCompletionCommands } from './commands/completion.js';
import { registerDaemonCommand } from './commands/daemon.js';
import { registerDaemonInstallCommands } from './commands/daemon-install.js';
import { registerDatasetCommands } from './commands/datasets.js';
import { registerGitCommands } from './commands/git.js';
import { registerFileCommands } from './commands/files.js';
import { registerHistoryCommands } from './commands/history.js';
import { registerHelpCommand } from './commands/help.js';
import { registerInitCommand } from './commands/init.js';
import { registerKeyCommands } from './commands/keys.js';
import { registerLoginCommands } from './commands/login.js';
import { registerMaintenanceCommands } from './commands/maintenance.js';
import { registerMountCommand } from './commands/mount.js';
import { registerProjectCommands } from './commands/projects.js';
import { registerPolicyCommands } from './commands/policy.js';
import { registerRetentionCommands } from './commands/retention.js';
import { registerServeCommand } from './commands/serve.js';
import { registerSnapshotCommands } from './commands/snapshots.js';
import { registerSsoCommands } from './commands/sso.js';
import { registerStatusCommands } from './commands/status.js';
import { registerSyncCommands } from './commands/sync.js';
import { registerTagCommands } from './commands/tags.js';
import { registerUiCommand } from './commands/ui.js';
import { registerWatchCommand } from './commands/watch.js';
import { DEFAULT_SERVER_URL } from './config.js';
import { contextFor } from './context.js';
import { CLI_VERSION } from './version.js';

const FOOTER = `
Target and credentials (flag > environment > config file):
  --server / STRATA_SERVER_URL / serverUrl   default ${DEFAULT_SERVER_URL}
  --api-key / STRATA_API_KEY / apiKey        prefer the environment or the config file
  --project / STRATA_PROJECT_ID / projectId
  config file: $XDG_CONFIG_HOME/strata/config.json (default ~/.config/strata/config.json)
  NO_COLOR (any non-empty value): no colour on a terminal

Exit codes: 0 ok, 1 unexpected, 2 usage, 3 not found, 4 conflict, 5 auth, 6 bad input,
            7 server unreachable, 8 fsck found problems
`;

export function buildProgram(): Command {
  const program = new Command('strata');
  program
    .description('Strata: automatic, complete file history for every project')
    .usage('[options] <command> [arguments]')
    .option('--server <url>', 'Strata server URL')
    .option('--api-key <key>', 'API key (visible in shell history; prefer STRATA_API_KEY)')
    .option('--project <projectId>', 'project to act on')
    .option('--json', 'machine output: one JSON document on stdout')
    // Set before any .command(): subcommands copy these settings when they are created.
    .exitOverride()
    .configureOutput({ outputError: () => {} })
    .showSuggestionAfterError(true)
    // Each command and option on one line of --help, however long: wrapped at 80 columns, a long
    // description continued on lines of its own that grep and narrow terminals cut apart.
    .configureHelp({ helpWidth: Number.MAX_SAFE_INTEGER })
    .addHelpText('after', FOOTER);

  registerProjectCommands(program);
  registerFileCommands(program);
  registerHistoryCommands(program);
  registerSnapshotCommands(program);
  registerCheckoutCommand(program);
  registerTagCommands(program);
  registerRetentionCommands(program);
  registerPolicyCommands(program);
  registerSyncCommands(program);
  registerDatasetCommands(program);
  registerGitCommands(program);
  registerKeyCommands(program);
  registerLoginCommands(program);
  registerSsoCommands(program);
  registerMaintenanceCommands(program);
  registerAdminCommands(program);
  registerServeCommand(program);
  // the daemon (issue 3)
  registerInitCommand(program);
  registerWatchCommand(program);
  registerMountCommand(program);
  registerDaemonCommand(program);
  registerDaemonInstallCommands(program);
  registerStatusCommands(program);
  registerUiCommand(program);
  registerCompletionCommands(program, FOOTER);

  program
    .command('version')
    .description('print the CLI version')
    .action((_options: unknown, command: Command) => {
      const ctx = contextFor(command);
      ctx.output.result({ version: CLI_VERSION, node: process.version }, () => ctx.output.line(CLI_VERSION));
    });
  // Last: the groups above keep commander's own `help` (`strata git help clone`); the program's reads nested names.
  registerHelpCommand(program);

  return program;
}
