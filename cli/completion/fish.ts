// `strata completion fish`: a static fish completion script. fish evaluates every `complete` rule
// of a command on each TAB, so one rule per subcommand and option (~350 here) cost ~17 ms per TAB and
// over 100 ms on a loaded machine (bench/completion.ts). Instead, two rules ask one function, which
// walks the command line once and prints the candidates of the command the cursor is in.

import type { CommandSpec, OptionSpec } from '../command-tree.js';
import { nodeKey, nodes, optionNames, optionsAt } from './shell-data.js';

/** 'text' quoted for fish: inside single quotes only \ and ' are escaped. */
function fishQuote(text: string): string {
  return `'${text.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
}

/** A candidate line, "word<TAB>description", as fish's `complete -a` reads a function's output. */
function candidate(word: string, description: string): string {
  return `${word}\t${description}`;
}

const WALK = `
function __strata_state --description 'strata: the command, argument count and pending option value of the line'
    set -l tokens (commandline -opc)
    set -l line (string join \\n -- $tokens)
    if set -q __strata_line; and test "$__strata_line" = "$line"
        return 0
    end
    set -l node ''
    set -l npos 0
    set -l pending ''
    for word in $tokens[2..-1]
        if test -n "$pending"
            set pending ''
            continue
        end
        switch $word
            case '-*'
                __strata_value_option "$node" $word >/dev/null; and set pending $word
            case '*'
                set -l child ''
                test $npos = 0; and set child (__strata_child "$node" $word)
                if test -n "$child"
                    set node $child
                else
                    set npos (math $npos + 1)
                end
        end
    end
    set -g __strata_line $line
    set -g __strata_node $node
    set -g __strata_npos $npos
    set -g __strata_pending $pending
end

function __strata_complete --description 'strata: the candidates at the cursor'
    __strata_state
    if test -n "$__strata_pending"
        __strata_value_option "$__strata_node" $__strata_pending
        return 0
    end
    switch (commandline -ct)
        case '-*'
            __strata_options "$__strata_node"
            return 0
    end
    if test $__strata_npos = 0
        __strata_commands "$__strata_node"; and return 0
    end
    __strata_arg_choices "$__strata_node" $__strata_npos
end

function __strata_files --description 'strata: is the cursor on a file name (an argument or option value with no fixed choices)'
    __strata_state
    if test -n "$__strata_pending"
        __strata_value_option "$__strata_node" $__strata_pending | string length -q; and return 1
        return 0
    end
    string match -q -- '-*' (commandline -ct); and return 1
    test $__strata_npos = 0; and __strata_commands "$__strata_node" >/dev/null; and return 1
    __strata_arg_choices "$__strata_node" $__strata_npos | string length -q; and return 1
    return 0
end

complete -c strata -f -a '(__strata_complete)'
complete -c strata -n __strata_files -F
`;

/** A fish function answering one `switch` over its arguments; `fallback` runs when no case matched. */
function switchFunction(name: string, description: string, subject: string, arms: Array<[string[], string[]]>, fallback: string): string {
  const lines = [`function ${name} --description ${fishQuote(description)}`, `    switch ${subject}`];
  for (const [patterns, body] of arms) lines.push(`        case ${patterns.join(' ')}`, ...body.map((line) => `            ${line}`));
  lines.push('    end', `    ${fallback}`, 'end');
  return lines.join('\n');
}

/** printf of candidate lines (printf, not echo: a description may start with '-'). */
function printLines(lines: string[]): string[] {
  return lines.length === 0 ? [] : [`printf '%s\\n' ${lines.map(fishQuote).join(' ')}`];
}

export function fishCompletion(root: CommandSpec): string {
  const all = nodes(root);
  const key = (node: CommandSpec, word: string) => fishQuote(`${nodeKey(node)}|${word}`);
  const children = all.flatMap((node) =>
    node.commands.map((child): [string[], string[]] => [[child.name, ...child.aliases].map((word) => key(node, word)), [`echo ${fishQuote(nodeKey(child))}`]]),
  );
  const commands = all
    .filter((node) => node.commands.length > 0)
    .map((node): [string[], string[]] => [
      [fishQuote(nodeKey(node))],
      [...printLines(node.commands.flatMap((child) => [child.name, ...child.aliases].map((word) => candidate(word, child.description)))), 'return 0'],
    ]);
  const optionLines = (option: OptionSpec) => optionNames(option).map((name) => candidate(name, option.description));
  const options = all.map((node): [string[], string[]] => [[fishQuote(nodeKey(node))], printLines(optionsAt(root, node).flatMap(optionLines))]);
  // Global options take their value after any command: one '*|--server' case covers every node.
  const globals = new Set(root.options.map((option) => option.long));
  const valued = all.flatMap((node) =>
    (node === root ? node.options : node.options.filter((option) => !globals.has(option.long)))
      .filter((option) => option.value !== undefined)
      .map((option): [string[], string[]] => [
        optionNames(option).map((name) => (node === root ? fishQuote(`*|${name}`) : key(node, name))),
        [...printLines(option.choices ?? []), 'return 0'],
      ]),
  );
  const argChoices = all.flatMap((node) =>
    node.arguments.flatMap((argument, index): Array<[string[], string[]]> =>
      argument.choices === undefined ? [] : [[[key(node, String(index))], printLines(argument.choices)]],
    ),
  );
  return [
    '# fish completion for strata. Generated by `strata completion fish` from the command definitions:',
    '# regenerate after upgrading Strata. Install:',
    '#   strata completion fish > ~/.config/fish/completions/strata.fish',
    '',
    switchFunction('__strata_child', 'strata: the command a subcommand word leads to', '"$argv[1]|$argv[2]"', children, ''),
    '',
    switchFunction('__strata_commands', "strata: a command's subcommands (status 1: it has none)", '"$argv[1]"', commands, 'return 1'),
    '',
    switchFunction('__strata_options', 'strata: the options accepted at a command', '"$argv[1]"', options, ''),
    '',
    switchFunction('__strata_value_option', "strata: does an option take a value (status), and its choices", '"$argv[1]|$argv[2]"', valued, 'return 1'),
    '',
    switchFunction('__strata_arg_choices', 'strata: the values an argument accepts', '"$argv[1]|$argv[2]"', argChoices, ''),
    WALK,
  ].join('\n');
}
