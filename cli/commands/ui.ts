// `strata ui`: the history browser. Asks the server the CLI talks to (the daemon by default) for a
// one-time sign-in link, opens it in the desktop's browser when there is one, and prints it. The link
// works once, within a minute; the browser keeps a session cookie, never a credential in its address.

import { spawn } from 'node:child_process';
import type { Command } from 'commander';
import { contextFor } from '../context.js';

interface UiLink {
  url: string;
  expiresAt: string;
}

export function registerUiCommand(program: Command): void {
  program
    .command('ui')
    .description('open the history browser in a web browser (a one-time sign-in link)')
    .option('--no-open', 'only print the link')
    .action(async (options: { open: boolean }, command: Command) => {
      const ctx = contextFor(command);
      const link = await ctx.client().json<UiLink>('POST', '/v1/ui/links', { json: {} });
      const opened = options.open && ctx.flags.json !== true ? await openInBrowser(link.url) : false;
      ctx.output.result({ ...link, opened }, () => {
        ctx.output.line(link.url);
        ctx.output.hint(opened ? 'opened in your browser; the link works once, within a minute' : 'open this link in a browser on this machine: it works once, within a minute');
      });
    });
}

/** $BROWSER, else xdg-open on a desktop session; false when neither is there (a terminal over SSH). */
function openInBrowser(url: string): Promise<boolean> {
  const command = process.env['BROWSER']?.trim() || (process.env['DISPLAY'] || process.env['WAYLAND_DISPLAY'] ? 'xdg-open' : '');
  if (command === '') return Promise.resolve(false);
  return new Promise((resolve) => {
    const child = spawn(command, [url], { detached: true, stdio: 'ignore' });
    child.once('error', () => resolve(false));
    child.once('spawn', () => {
      child.unref();
      resolve(true);
    });
  });
}
