// The command tree as shell `case` functions, shared by the bash and the zsh script (both shells read
// this syntax alike). Completion then runs entirely in the shell: no node process starts at TAB
// time, where one start of the CLI alone costs ~200 ms (bench/completion.ts measures both).
//
// A node is a command path joined by spaces ('' for the program, 'snapshot restore'). Each function
// answers in the variable _strata_r, which the caller declares local: a subshell per word (`$(...)`)
// would cost a fork each.

import type { CommandSpec, OptionSpec } from '../command-tree.js';
import { allCommands } from '../command-tree.js';

/** 'text' quoted for bash and zsh: single quotes, a single quote written as '\'' */
export function shellQuote(text: string): string {
  return `'${text.replace(/'/g, `'\\''`)}'`;
}

export function nodeKey(command: CommandSpec): string {
  return command.path.join(' ');
}

/** The options accepted at a node: its own, then the program's (global options work after any command). */
export function optionsAt(root: CommandSpec, command: CommandSpec): OptionSpec[] {
  if (command === root) return root.options;
  const own = new Set(command.options.map((option) => option.long));
  return [...command.options, ...root.options.filter((option) => !own.has(option.long))];
}

export function optionNames(option: OptionSpec): string[] {
  return option.short === undefined ? [option.long] : [option.long, option.short];
}

/** Every node, the program first. */
export function nodes(root: CommandSpec): CommandSpec[] {
  return [root, ...allCommands(root)];
}

function caseFunction(name: string, comment: string, subject: string, arms: Array<[string[], string]>): string {
  const lines = [`${name}() { # ${comment}`, `  case ${subject} in`];
  for (const [patterns, value] of arms) lines.push(`    ${patterns.join('|')}) _strata_r=${shellQuote(value)} ;;`);
  lines.push(`    *) _strata_r='' ;;`, '  esac', '}');
  return lines.join('\n');
}

export function shellDataFunctions(root: CommandSpec): string {
  const all = nodes(root);
  const children: Array<[string[], string]> = all.flatMap((node) =>
    node.commands.map((child): [string[], string] => [
      [child.name, ...child.aliases].map((word) => shellQuote(`${nodeKey(node)}|${word}`)),
      nodeKey(child),
    ]),
  );
  const words: Array<[string[], string]> = all
    .filter((node) => node.commands.length > 0)
    .map((node) => [[shellQuote(nodeKey(node))], node.commands.flatMap((child) => [child.name, ...child.aliases]).join(' ')]);
  const options: Array<[string[], string]> = all.map((node) => [[shellQuote(nodeKey(node))], optionsAt(root, node).flatMap(optionNames).join(' ')]);
  // Global options take their value after any command: one `*|--server` arm covers every node.
  const globalLongs = new Set(root.options.map((option) => option.long));
  const valued: Array<[string[], string]> = all.flatMap((node) =>
    (node === root ? node.options : node.options.filter((option) => !globalLongs.has(option.long)))
      .filter((option) => option.value !== undefined)
      .map((option): [string[], string] => [
        optionNames(option).map((name) => (node === root ? `*${shellQuote(`|${name}`)}` : shellQuote(`${nodeKey(node)}|${name}`))),
        option.choices?.join(' ') ?? '',
      ]),
  );
  const argChoices: Array<[string[], string]> = all.flatMap((node) =>
    node.arguments.flatMap((argument, index): Array<[string[], string]> =>
      argument.choices === undefined ? [] : [[[shellQuote(`${nodeKey(node)}|${index}`)], argument.choices.join(' ')]],
    ),
  );
  return [
    caseFunction('_strata_child', 'node word: the node a subcommand word leads to', '"$1|$2"', children),
    caseFunction('_strata_words', 'node: its subcommands and their aliases', '"$1"', words),
    caseFunction('_strata_options', 'node: the options accepted there', '"$1"', options),
    // Status 0 when the option takes a value; _strata_r is then the values it accepts, if known.
    [
      '_strata_value_option() { # node option: whether it takes a value (status), its choices',
      '  _strata_r=\'\'',
      '  case "$1|$2" in',
      ...valued.map(([patterns, value]) => `    ${patterns.join('|')}) _strata_r=${shellQuote(value)}; return 0 ;;`),
      '  esac',
      '  return 1',
      '}',
    ].join('\n'),
    caseFunction('_strata_arg_choices', 'node position: the values an argument accepts, if known', '"$1|$2"', argChoices),
  ].join('\n\n');
}
