// `strata completion bash|zsh|fish`, run by the real shells: bash calls the completion function the
// way readline does (COMP_WORDS/COMP_CWORD), zsh completes a TAB typed at an interactive shell on a
// pseudo-terminal, fish answers `complete -C`. The expected words come from `strata man --json` (the
// command tree), so a command added later is checked without editing this file.

import { type ChildProcess, execFileSync, spawn, spawnSync } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CommandSpec } from '../cli/command-tree.js';
import { baseEnv, parseJson, runCli } from './cli-harness.js';
import { waitFor } from './daemon-harness.js';

// CI installs zsh and fish (.ci/run): there a missing shell fails these tests instead of skipping them.
const has = (tool: string) => process.env['CI'] === 'true' || spawnSync('sh', ['-c', `command -v ${tool}`]).status === 0;

let dir: string;
let env: NodeJS.ProcessEnv;
let tree: CommandSpec;
const scripts: Record<string, string> = {};

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'strata-completion-'));
  env = baseEnv(join(dir, 'config'));
  for (const shell of ['bash', 'zsh', 'fish']) {
    const result = await runCli(['completion', shell], env);
    expect(result.code, result.stderr).toBe(0);
    scripts[shell] = join(dir, `strata.${shell}`);
    await writeFile(scripts[shell]!, result.stdout);
  }
  tree = parseJson<CommandSpec>(await runCli(['man', '--json'], env));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const topLevel = () => tree.commands.flatMap((command) => [command.name, ...command.aliases]);

describe('strata completion bash', () => {
  /** COMPREPLY for a command line whose last word is the one being completed. */
  function complete(...words: string[]): string[] {
    // PATH points nowhere: the completion must run on bash builtins alone (no node, no strata).
    // biome-ignore lint/suspicious/noTemplateCurlyInString: bash text, not a template
    const script = 'source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _strata; printf "%s\\n" "${COMPREPLY[@]}"';
    const out = execFileSync('/bin/bash', ['--norc', '--noprofile', '-c', script, 'bash', scripts['bash']!, ...words], {
      env: { PATH: '/nonexistent' },
      encoding: 'utf8',
    });
    return out.split('\n').filter((line) => line !== '');
  }

  it('completes a command and its alias from a prefix', () => {
    expect(complete('strata', 'sna')).toEqual(['snapshot', 'snapshots']);
    expect(complete('strata', '')).toEqual(topLevel());
    expect(topLevel()).toEqual(expect.arrayContaining(['completion', 'man', 'daemon', 'serve', 'history', 'version']));
  });

  it('completes the subcommands of a group, through an alias and after global options', () => {
    const subcommands = ['create', 'list', 'show', 'diff', 'restore', 'help'];
    expect(complete('strata', 'snapshot', '')).toEqual(subcommands);
    expect(complete('strata', 'snapshots', '')).toEqual(subcommands);
    expect(complete('strata', '--json', 'snapshot', 'cr')).toEqual(['create']);
    // --server takes a value: the URL is not mistaken for a command
    expect(complete('strata', '--server', 'http://127.0.0.1:7420', 'snapshot', 're')).toEqual(['restore']);
    // as readline splits it (':' and '=' break words): the URL's pieces are still the option's value
    expect(complete('strata', '--server', 'http', ':', '//127.0.0.1', ':', '7420', 'snapshot', 're')).toEqual(['restore']);
    expect(complete('strata', '--server', '=', 'http', ':', '//127.0.0.1', ':', '7420', 'snapshot', 're')).toEqual(['restore']);
  });

  it("completes a command's options together with the global ones", () => {
    const restore = complete('strata', 'snapshot', 'restore', '--');
    expect(restore).toEqual(expect.arrayContaining(['--help', '--server', '--api-key', '--project', '--json']));
    expect(restore).not.toContain('--message');
    expect(complete('strata', 'snapshot', 'create', '-')).toEqual(expect.arrayContaining(['--message', '-m', '-h', '--json']));
    expect(complete('strata', 'serve', '--log')).toEqual(['--log-format']);
  });

  it('offers the values an option or an argument accepts, and nothing made up elsewhere', () => {
    expect(complete('strata', 'daemon', '--log-format', '')).toEqual(['json', 'pretty']);
    expect(complete('strata', 'completion', '')).toEqual(['bash', 'zsh', 'fish']);
    expect(complete('strata', 'completion', 'z')).toEqual(['zsh']);
    // a path argument: no words from the tree (bash falls back to file names)
    expect(complete('strata', 'history', '')).toEqual([]);
    expect(complete('strata', 'nosuchcommand', '')).toEqual([]);
  });

  it('knows every command of the tree, at every depth', () => {
    const walk = (command: CommandSpec): void => {
      if (command.commands.length === 0) return;
      const names = command.commands.flatMap((sub) => [sub.name, ...sub.aliases]);
      expect(complete('strata', ...command.path, ''), command.path.join(' ')).toEqual(names);
      command.commands.forEach(walk);
    };
    walk(tree);
  });
});

describe.skipIf(!has('zsh'))('strata completion zsh', () => {
  it('is valid zsh (zsh -n) and decides like bash', () => {
    expect(spawnSync('zsh', ['-n', scripts['zsh']!], { encoding: 'utf8' }).status).toBe(0);
    const decide = (...words: string[]) =>
      execFileSync('zsh', ['-f', '-c', 'source "$1"; shift; words=("$@"); CURRENT=$#words; _strata_candidates; print -r -- "$_strata_kind|$_strata_node|$_strata_r"', 'zsh', scripts['zsh']!, ...words], {
        encoding: 'utf8',
      }).trim();
    expect(decide('strata', 'snapshot', '')).toBe('commands|snapshot|create list show diff restore help');
    expect(decide('strata', '--project', 'p1', 'snapshot', 'restore', '--')).toBe('options|snapshot restore|');
    expect(decide('strata', 'completion', '')).toBe('values|completion|bash zsh fish');
    expect(decide('strata', 'history', '')).toBe('files|history|');
  });

  it('completes a TAB typed at an interactive zsh (compinit, the script on $fpath)', async () => {
    const fpath = join(dir, 'zfunc');
    execFileSync('mkdir', ['-p', fpath]);
    execFileSync('cp', [scripts['zsh']!, join(fpath, '_strata')]);
    // script(1) gives zsh a pseudo-terminal, so its line editor runs and TAB is the completion key.
    const child: ChildProcess = spawn('script', ['-qfec', 'zsh -f -i', '/dev/null'], { env: { ...env, TERM: 'dumb', HOME: dir }, stdio: ['pipe', 'pipe', 'pipe'] });
    let screen = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      screen += chunk.toString('utf8');
    });
    try {
      // The prompt is written 'Z''P> ' on the input line, so only zsh's own prompt contains "ZP> ".
      child.stdin!.write(`fpath=(${fpath} $fpath); autoload -U compinit; compinit -u -D; PS1='Z''P> '\n`);
      await waitFor('the zsh prompt', () => (screen.includes('ZP> ') ? true : undefined), 20_000);
      child.stdin!.write('strata snapshot \t');
      await waitFor('the list of snapshot subcommands', () => (/restore\s+--\s+make the project's files what they were in a snapshot/.test(screen) ? true : undefined), 20_000);
      expect(screen).toMatch(/create\s+--\s+pin every current file/);
      child.stdin!.write('\x15exit\n');
    } finally {
      child.kill('SIGKILL');
    }
  });
});

describe.skipIf(!has('fish'))('strata completion fish', () => {
  // In `dir`, which holds the scripts: file names are offered where a path goes, and only there.
  const complete = (line: string) =>
    execFileSync('fish', ['--no-config', '-c', 'source $argv[1]; complete -C $argv[2]', scripts['fish']!, line], { encoding: 'utf8', cwd: dir })
      .split('\n')
      .filter((row) => row !== '')
      .map((row) => row.split('\t')[0]);

  it('is valid fish (fish --no-execute)', () => {
    const check = spawnSync('fish', ['--no-execute', scripts['fish']!], { encoding: 'utf8' });
    expect(check.status, check.stderr).toBe(0);
  });

  it('completes commands, subcommands, options and values', () => {
    expect(complete('strata snap')).toEqual(['snapshot', 'snapshots']);
    expect(complete('strata snapshot ').sort()).toEqual(['create', 'diff', 'help', 'list', 'restore', 'show']);
    expect(complete('strata --json snapshot cr')).toEqual(['create']);
    const options = complete('strata snapshot create --');
    expect(options).toEqual(expect.arrayContaining(['--message', '--json', '--server', '--help']));
    expect(complete('strata snapshot restore --')).not.toContain('--message');
    expect(complete('strata completion ').sort()).toEqual(['bash', 'fish', 'zsh']);
    expect(complete('strata daemon --log-format ').sort()).toEqual(['json', 'pretty']);
    expect(complete('strata ').sort()).toEqual(topLevel().sort());
    expect(complete('strata history strata.b')).toEqual(['strata.bash']);
    expect(complete('strata --server strata.f')).toEqual(['strata.fish']);
    expect(complete('strata snapshot strata.')).toEqual([]);
  });
});

describe('strata completion, misuse', () => {
  it('an unknown shell is a usage error (exit 2) that names the three shells', async () => {
    const result = await runCli(['completion', 'tcsh'], env);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/^strata: .*'tcsh'.*bash, zsh, fish.* \(USAGE\)\n$/);
    const json = await runCli(['completion', 'tcsh', '--json'], env);
    expect(json.code).toBe(2);
    expect(parseJson<{ error: { code: string } }>(json).error.code).toBe('USAGE');
  });
});
