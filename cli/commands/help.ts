// `strata help [COMMAND...]`: the help of any command, nested ones included (`strata help snapshot
// restore`, `strata help git clone`). Commander's own help command reads only the first name after
// `help` and printed the group's help for those (and exited 2, as for a group run without its
// subcommand); this one follows the whole path, as `strata snapshot restore --help` does.
import type { Command } from 'commander';
import { CliError, EXIT } from '../errors.js';

/** Replaces the program's built-in help command; register it after every other command. */
export function registerHelpCommand(program: Command): void {
  program.helpCommand(false);
  program
    .command('help')
    .description('display help for command')
    .argument('[command...]', 'a command and its subcommands, e.g. `snapshot restore`')
    .action((names: string[]) => {
      let target = program;
      const path: string[] = [];
      for (const name of names) {
        path.push(name);
        const sub = target.commands.find((command) => command.name() === name || command.aliases().includes(name));
        if (sub === undefined) {
          throw new CliError('USAGE', `unknown command '${path.join(' ')}' (see strata ${path.length > 1 ? `help ${path.slice(0, -1).join(' ')}` : '--help'})`, {
            exitCode: EXIT.usage,
            details: { command: path.join(' ') },
          });
        }
        target = sub;
      }
      target.outputHelp();
    });
}
