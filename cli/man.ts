// `strata man`: the manual page, in roff, generated from the command tree (command-tree.ts) and the
// footer of `strata --help`, so that the page, --help and the completions say the same thing.
// Read it with `strata man | man -l -`, or install it as ~/.local/share/man/man1/strata.1.

import { allCommands, type ArgumentSpec, type CommandSpec, type OptionSpec } from './command-tree.js';

/** Text for roff: backslashes printed as such, '-' as a minus (a copy-pasted option must work), no line starting with a control character. */
function roff(text: string): string {
  return text
    .replace(/\\/g, '\\e')
    .replace(/-/g, '\\-')
    .replace(/^([.'])/gm, '\\&$1')
    // Non-ASCII as groff's \[uXXXX]: the page renders the same whatever the reader's locale and preconv.
    .replace(/[^\t\n -~]/gu, (char) => `\\[u${char.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}]`);
}

function optionItem(option: OptionSpec): string {
  const names = [option.short, option.long].filter((name): name is string => name !== undefined).map((name) => `\\fB${roff(name)}\\fR`);
  const value = option.value === undefined ? '' : ` \\fI${roff(option.value)}\\fR`;
  const choices = option.choices === undefined ? '' : ` (one of: ${option.choices.join(', ')})`;
  return `.TP\n${names.join(', ')}${value}\n${roff(option.description + choices)}`;
}

function argumentItem(argument: ArgumentSpec): string {
  const choices = argument.choices === undefined ? '' : ` (one of: ${argument.choices.join(', ')})`;
  return `.TP\n\\fI${roff(argument.name)}\\fR${argument.variadic ? '...' : ''}\n${roff(argument.description + choices)}${argument.required ? '' : ' (optional)'}`;
}

function commandSection(command: CommandSpec): string {
  const lines = [`.SS "strata ${roff(command.path.join(' '))}"`];
  lines.push(`.B strata ${roff(command.path.join(' '))}`, roff(command.usage));
  lines.push('.PP', roff(command.description || '(no description)'));
  if (command.aliases.length > 0) lines.push('.PP', `Also: ${command.aliases.map((alias) => `\\fB${roff(alias)}\\fR`).join(', ')}.`);
  if (command.arguments.some((argument) => argument.description !== '')) {
    lines.push('.PP', 'Arguments:', '.RS', ...command.arguments.map(argumentItem), '.RE');
  }
  if (command.options.length > 0) lines.push('.PP', 'Options:', '.RS', ...command.options.map(optionItem), '.RE');
  return lines.join('\n');
}

/**
 * The footer of --help has two parts: where the target and credentials come from (the ENVIRONMENT
 * section) and the exit codes, as "Exit codes: 0 ok, 1 unexpected, ...". A footer without the
 * exit codes is a programming error: the page would silently lose a section.
 */
function footerSections(footer: string): string {
  const at = footer.indexOf('Exit codes:');
  if (at === -1) throw new TypeError('the help footer has no "Exit codes:" line');
  const environment = footer.slice(0, at).replace(/^\n+|\s+$/g, '');
  const codes = [...footer.slice(at + 'Exit codes:'.length).replace(/\s+/g, ' ').matchAll(/(\d+) ([^,]+)/g)];
  return [
    '.SH ENVIRONMENT',
    '.nf',
    roff(environment),
    '.fi',
    '.SH "EXIT STATUS"',
    ...codes.map(([, code, meaning]) => `.TP\n.B ${code}\n${roff(meaning!.trim())}`),
  ].join('\n');
}

export function manPage(root: CommandSpec, footer: string, version: string): string {
  const summary = root.description.replace(/^Strata:\s*/i, '');
  return [
    `.TH STRATA 1 "" "strata ${roff(version)}" "Strata Manual"`,
    '.SH NAME',
    `strata \\- ${roff(summary)}`,
    '.SH SYNOPSIS',
    `.B strata\n${roff(root.usage)}`,
    '.SH DESCRIPTION',
    roff(root.description),
    '.PP',
    'Every command takes \\fB\\-\\-help\\fR; \\fBstrata help\\fR \\fIcommand\\fR says the same.',
    '.SH "GLOBAL OPTIONS"',
    'Accepted before or after any command.',
    ...root.options.map(optionItem),
    '.SH COMMANDS',
    ...allCommands(root).map(commandSection),
    footerSections(footer),
    '',
  ].join('\n');
}
