// The daemon's systemd user unit as `strata daemon install` writes it: systemd/strata-daemon.service
// (the one copy of the unit's settings) with this installation's paths filled in — the node binary
// and its flags (what bin/strata gives node), the CLI entry, STRATA_HOME.

import { readFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';

export const UNIT_NAME = 'strata-daemon.service';

/** systemd/ of the package: this file runs as dist/cli/systemd-unit.js. */
const TEMPLATE = resolve(import.meta.dirname, '..', '..', 'systemd', UNIT_NAME);

// bin/strata's flags for `daemon` (see its comments for the measurements behind them).
const NODE_FLAGS = ['--max-semi-space-size=4', '--heap-growing-percent=50'];

export interface UnitPaths {
  node: string;
  cliMain: string;
  home: string;
}

/** $XDG_CONFIG_HOME/systemd/user (default ~/.config/systemd/user): where systemd looks for user units. */
export function userUnitDir(env: NodeJS.ProcessEnv = process.env): string {
  const config = env['XDG_CONFIG_HOME'] ? resolve(env['XDG_CONFIG_HOME']) : join(homedir(), '.config');
  return join(config, 'systemd', 'user');
}

export async function renderDaemonUnit(paths: UnitPaths): Promise<string> {
  const template = await readFile(TEMPLATE, 'utf8');
  const body = template.slice(template.indexOf('[Unit]'));
  if (body === '' || !/^ExecStart=/m.test(body)) throw new Error(`${TEMPLATE} is not the daemon unit`);
  const execStart = ['ExecStart=' + [paths.node, ...NODE_FLAGS, paths.cliMain, 'daemon'].map(execArgument).join(' ')];
  const lines: string[] = [];
  for (const line of body.split('\n')) {
    if (/^# %h is your home directory/.test(line)) continue; // the template's "adjust this path"
    if (/^ExecStart=/.test(line)) lines.push(...execStart);
    else if (/^#?Environment=STRATA_HOME=/.test(line)) lines.push(environment('STRATA_HOME', paths.home));
    else lines.push(line);
  }
  const header = [
    `# Written by \`strata daemon install\`; \`strata daemon uninstall\` stops and removes it.`,
    '# Logs: journalctl --user -u strata-daemon -f      Status: strata status',
    '# Keep it running while you are logged out: loginctl enable-linger "$USER"',
    '',
  ];
  return header.join('\n') + lines.join('\n');
}

// systemd's command-line syntax: a word with spaces or quotes is double-quoted with C escapes; `%`
// starts a specifier (%h) and `$` a variable in ExecStart, so both are doubled to stand for themselves.
function execArgument(word: string): string {
  const escaped = word.replace(/%/g, '%%').replace(/\$/g, '$$$$');
  return /^[A-Za-z0-9_@%+=:,./-]+$/.test(escaped) ? escaped : `"${escaped.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
}

/** Environment= takes the whole assignment quoted; `%` is still a specifier there (`$` is not). */
function environment(name: string, value: string): string {
  const assignment = `${name}=${value.replace(/%/g, '%%')}`;
  return /^[A-Za-z0-9_@%+=:,./-]+$/.test(assignment) ? `Environment=${assignment}` : `Environment="${assignment.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
}
