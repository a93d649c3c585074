// `strata policy`: which files keep their history (docs/design.md §2's size policy). Files on the
// always-list keep every version; any other file larger than the threshold — a dataset included —
// keeps only its current content unless its extension is allowlisted. The rule used to be invisible:
// a 55 MiB results.csv lost its history without a word (issue 13).
import type { Command } from 'commander';
import type { Project, VersioningPolicy } from '../../engine/types.js';
import { contextFor } from '../context.js';
import { CliError, EXIT } from '../errors.js';
import { formatBytes } from '../output.js';

const SIZE = /^(\d+(?:\.\d+)?)\s*(b|k|kb|kib|m|mb|mib|g|gb|gib|t|tb|tib)?$/i;
const FACTORS: Record<string, number> = { b: 1, k: 1024, kb: 1000, kib: 1024, m: 1024 ** 2, mb: 1000 ** 2, mib: 1024 ** 2, g: 1024 ** 3, gb: 1000 ** 3, gib: 1024 ** 3, t: 1024 ** 4, tb: 1000 ** 4, tib: 1024 ** 4 };

/** '50MiB', '50M' (MiB), '52428800', '2GB' → bytes. */
export function parseSize(text: string, name: string): number {
  const match = SIZE.exec(text.trim());
  const bytes = match === null ? Number.NaN : Math.round(Number(match[1]) * FACTORS[(match[2] ?? 'b').toLowerCase()]!);
  if (!Number.isSafeInteger(bytes) || bytes < 0) {
    throw new CliError('USAGE', `${name} must be a size like 50MiB, 2GiB or a number of bytes (got ${JSON.stringify(text)})`, { exitCode: EXIT.usage, details: { field: name } });
  }
  return bytes;
}

/** The warning for a path whose older versions the size policy does not keep (put, history). */
export function historyNotKept(path: string, size: number): string {
  const ext = /\.[^./]+$/.exec(path)?.[0]?.toLowerCase();
  return `the history of ${JSON.stringify(path)} (${formatBytes(size)}) is not kept: files over the size threshold keep only their current content unless their extension is allowlisted${ext ? ` (\`strata policy allow ${ext}\`)` : ''}; see \`strata policy\``;
}

function normalizeExtension(ext: string): string {
  return (ext.startsWith('.') ? ext : `.${ext}`).toLowerCase();
}

export function policyText(policy: VersioningPolicy): string {
  const allow = policy.largeFileAllowlist.length > 0 ? policy.largeFileAllowlist.join(' ') : '(none)';
  return [
    `always versioned:       ${policy.alwaysExtensions.join(' ') || '(none)'}`,
    `size threshold:         ${formatBytes(policy.sizeThreshold)} (${policy.sizeThreshold} bytes)`,
    `large-file allowlist:   ${allow}`,
    `Any other file larger than ${formatBytes(policy.sizeThreshold)} (a dataset too) keeps only its current content;`,
    'allow its extension (`strata policy allow .csv`) to keep its history.',
  ].join('\n');
}

export function registerPolicyCommands(program: Command): void {
  const policy = program.command('policy').description('which files keep their history: the size threshold and the large-file allowlist');

  const show = async (command: Command) => {
    const ctx = contextFor(command);
    const current = await ctx.client().json<VersioningPolicy>('GET', ctx.projectPath('/policy'));
    ctx.output.result(current, () => ctx.output.line(policyText(current)));
  };
  policy.action(async (_options: unknown, command: Command) => show(command));
  policy
    .command('show')
    .description('show the policy')
    .action(async (_options: unknown, command: Command) => show(command));

  const change = async (command: Command, patch: (current: VersioningPolicy) => Partial<VersioningPolicy>) => {
    const ctx = contextFor(command);
    const current = await ctx.client().json<VersioningPolicy>('GET', ctx.projectPath('/policy'));
    const updated = await ctx.client().json<Project>('PUT', ctx.projectPath('/policy'), { json: patch(current) });
    ctx.output.result(updated.policy, () => ctx.output.line(policyText(updated.policy)));
  };
  policy
    .command('allow')
    .description('keep the history of large files with these extensions (e.g. .csv .h5)')
    .argument('<ext...>', 'extensions')
    .action(async (exts: string[], _options: unknown, command: Command) =>
      change(command, (current) => ({ largeFileAllowlist: [...new Set([...current.largeFileAllowlist, ...exts.map(normalizeExtension)])] })),
    );
  policy
    .command('disallow')
    .description('large files with these extensions keep only their current content again')
    .argument('<ext...>', 'extensions')
    .action(async (exts: string[], _options: unknown, command: Command) => {
      const drop = new Set(exts.map(normalizeExtension));
      await change(command, (current) => ({ largeFileAllowlist: current.largeFileAllowlist.filter((ext) => !drop.has(ext)) }));
    });
  policy
    .command('threshold')
    .description('files larger than SIZE keep their history only if allowlisted (e.g. 50MiB, 2GiB)')
    .argument('<size>', 'a size: 50MiB, 2GiB, or bytes')
    .action(async (size: string, _options: unknown, command: Command) => change(command, () => ({ sizeThreshold: parseSize(size, 'SIZE') })));
}
