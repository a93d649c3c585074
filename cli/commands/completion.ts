// `strata completion SHELL` and `strata man`: both generated from the command tree this program is
// built from (cli/command-tree.ts), so they cannot drift from the commands themselves.

import { Argument, type Command } from 'commander';
import { commandTree } from '../command-tree.js';
import { bashCompletion } from '../completion/bash.js';
import { fishCompletion } from '../completion/fish.js';
import { zshCompletion } from '../completion/zsh.js';
import { contextFor } from '../context.js';
import { manPage } from '../man.js';
import { CLI_VERSION } from '../version.js';

const SHELLS = { bash: bashCompletion, zsh: zshCompletion, fish: fishCompletion } as const;
type Shell = keyof typeof SHELLS;

function rootOf(command: Command): Command {
  let root = command;
  while (root.parent !== null) root = root.parent;
  return root;
}

/** `footer` is the text --help prints after the commands: the page's ENVIRONMENT and EXIT STATUS. */
export function registerCompletionCommands(program: Command, footer: string): void {
  program
    .command('completion')
    .description('print a completion script for bash, zsh or fish (see README "Shell completion and the manual")')
    .addArgument(new Argument('<shell>', 'bash, zsh or fish').choices(Object.keys(SHELLS)))
    .action((shell: Shell, _options: unknown, command: Command) => {
      const ctx = contextFor(command);
      const script = SHELLS[shell](commandTree(rootOf(command)));
      ctx.output.result({ shell, script }, () => process.stdout.write(script));
    });

  program
    .command('man')
    .description('print the manual page (roff): strata man | man -l -')
    .action((_options: unknown, command: Command) => {
      const ctx = contextFor(command);
      const tree = commandTree(rootOf(command));
      // Under --json, the command tree itself: what the page is made from, for other tools.
      ctx.output.result(tree, () => process.stdout.write(manPage(tree, footer, CLI_VERSION)));
    });
}
