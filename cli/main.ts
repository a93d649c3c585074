// Entry point (bin/strata execs `node dist/cli/main.js`). Runs the command, then turns whatever went
// wrong into one line on stderr — `strata: <message> (<CODE>)` — plus, under --json, an error document
// on stdout, and the exit code from the table in errors.ts.

import { CommanderError } from 'commander';
import { colorEnabled, painter } from './color.js';
import { CliError, EXIT, humanMessage, toCliError } from './errors.js';
import { buildProgram } from './program.js';
import { CLI_VERSION } from './version.js';

const HINTS: Partial<Record<number, string>> = {
  [EXIT.unreachable]: 'is the server running? start one with `strata serve`, or set STRATA_SERVER_URL',
  [EXIT.auth]: 'sign in with `strata login`, or check STRATA_API_KEY (a new home needs `strata admin bootstrap`)',
};

function wantsJson(args: string[]): boolean {
  const end = args.indexOf('--');
  return (end === -1 ? args : args.slice(0, end)).includes('--json');
}

function report(error: CliError, json: boolean): void {
  // --json means a program reads the output: no colour on either stream.
  const paint = painter(!json && colorEnabled(process.stderr));
  process.stderr.write(`strata: ${paint('red', humanMessage(error))} (${error.code})\n`);
  // A message that already says what to start needs no generic hint.
  // A refusal (403) is not a credential problem: the auth hint is for missing or bad credentials only.
  const credentialProblem = error.exitCode !== EXIT.auth || error.code === 'UNAUTHENTICATED' || error.code === 'NO_CREDENTIALS';
  // The unreachable hint is about a server the command itself talked to: a linked project's `sync
  // wait` that timed out named STRATA_SERVER_URL, which has nothing to do with it.
  const notAboutServer = error.code === 'DAEMON_NOT_RUNNING' || error.code.startsWith('SYNC_');
  const hint = notAboutServer || error.message.includes('strata login') || !credentialProblem ? undefined : HINTS[error.exitCode];
  if (hint && !json) process.stderr.write(`strata: ${paint('cyan', hint)}\n`);
  if (json) process.stdout.write(JSON.stringify(error.toJson(), null, 2) + '\n');
}

export async function main(args: string[]): Promise<number> {
  const json = wantsJson(args);
  if (args.length === 1 && (args[0] === '--version' || args[0] === '-V')) {
    process.stdout.write(CLI_VERSION + '\n');
    return EXIT.ok;
  }
  // `strata cat big | head` closes our stdout early: that is the reader's choice, not an error.
  process.stdout.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code === 'EPIPE') process.exit(EXIT.ok);
    throw error;
  });
  try {
    await buildProgram().parseAsync(args, { from: 'user' });
    return typeof process.exitCode === 'number' ? process.exitCode : EXIT.ok;
  } catch (error) {
    if (error instanceof CommanderError) {
      if (error.code === 'commander.helpDisplayed' || error.code === 'commander.version') return EXIT.ok;
      if (error.code === 'commander.help') {
        // A command group without its subcommand: commander printed the group's help on stderr.
        if (json) report(new CliError('USAGE', 'missing subcommand (see the help above)', { exitCode: EXIT.usage }), json);
        return EXIT.usage;
      }
      const message = error.message.replace(/^error: /, '');
      report(new CliError('USAGE', message, { exitCode: EXIT.usage, details: { commander: error.code } }), json);
      return EXIT.usage;
    }
    const cliError = toCliError(error);
    if (cliError.code === 'INTERNAL' && process.env['STRATA_DEBUG'] && error instanceof Error) {
      process.stderr.write(`${error.stack}\n`);
    }
    report(cliError, json);
    return cliError.exitCode;
  }
}

process.exitCode = await main(process.argv.slice(2));
