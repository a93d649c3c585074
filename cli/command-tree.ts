// The command tree as plain data, read from the commander program that parses the command line. Shell
// completion scripts and the man page are generated from this, so a command or option added in
// cli/commands/ shows up in both without a second, hand-kept list that could drift.

import { type Command, Help } from 'commander';

export interface OptionSpec {
  /** '--message' (always present: every Strata option has a long form) */
  long: string;
  /** '-m', when the option has one */
  short?: string;
  /** the value placeholder ('<message>'), when the option takes a value */
  value?: string;
  /** the values it accepts, when commander knows them (`.choices()`) */
  choices?: string[];
  description: string;
}

export interface ArgumentSpec {
  name: string;
  required: boolean;
  variadic: boolean;
  choices?: string[];
  description: string;
}

export interface CommandSpec {
  name: string;
  aliases: string[];
  /** names from the root: [] for the program, ['snapshot', 'restore'] for `strata snapshot restore` */
  path: string[];
  description: string;
  /** commander's usage line after the command path: '[options] <snapshot>' */
  usage: string;
  arguments: ArgumentSpec[];
  /** this command's own options (for the root: the global ones, accepted after any command too) */
  options: OptionSpec[];
  commands: CommandSpec[];
}

/**
 * Walks a commander program. Hidden commands and options are left out (they are hidden from --help
 * too); commander's own `help` command and `-h, --help` are in, since they work on every command.
 */
export function commandTree(program: Command): CommandSpec {
  // A fresh Help, not program.createHelp(): only the filtering is wanted, not any help configuration.
  return walk(program, [], new Help());
}

function walk(command: Command, path: string[], help: Help): CommandSpec {
  return {
    name: command.name(),
    aliases: [...command.aliases()],
    path,
    description: oneLine(command.description()),
    usage: command.usage(),
    arguments: command.registeredArguments.map((argument) => ({
      name: argument.name(),
      required: argument.required,
      variadic: argument.variadic,
      ...(argument.argChoices === undefined ? {} : { choices: [...argument.argChoices] }),
      description: oneLine(argument.description ?? ''),
    })),
    options: help.visibleOptions(command).flatMap((option) => {
      if (option.long === undefined) return [];
      const value = /[<[][^>\]]*[>\]]/.exec(option.flags)?.[0];
      return [
        {
          long: option.long,
          ...(option.short === undefined ? {} : { short: option.short }),
          ...(value === undefined ? {} : { value }),
          ...(option.argChoices === undefined ? {} : { choices: [...option.argChoices] }),
          description: oneLine(option.description ?? ''),
        },
      ];
    }),
    commands: help.visibleCommands(command).map((sub) => walk(sub, [...path, sub.name()], help)),
  };
}

/** Every command below `root`, depth first (the root itself excluded). */
export function allCommands(root: CommandSpec): CommandSpec[] {
  return root.commands.flatMap((command) => [command, ...allCommands(command)]);
}

/** Descriptions end up on one line of a menu or a man page paragraph. */
function oneLine(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}
