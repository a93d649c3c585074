// Which files are datasets: per-project rules (docs/design.md §2 "Dataset"). A file is a dataset when its
// path matches a tracked path or glob, or when it is larger than the shard threshold. Patterns are
// project-relative, picomatch syntax (`data/**/*.h5`, `raw/run-*.bin`); a plain path matches itself.
import picomatch from 'picomatch';
import { StrataError } from '../errors.js';
import { unsafeCharacterReason } from '../unsafe-text.js';
import type { DatasetRules } from '../types.js';

/** 64 MiB: below that, one object per version costs less than a manifest plus its shards. */
export const DEFAULT_DATASET_THRESHOLD_BYTES = 64 * 1024 * 1024;

export const DEFAULT_DATASET_RULES: Readonly<DatasetRules> = Object.freeze({
  tracked: [],
  thresholdBytes: DEFAULT_DATASET_THRESHOLD_BYTES,
});

const MAX_PATTERNS = 1000;
const MAX_PATTERN_LENGTH = 1024;

/** A pattern as given by a user: INVALID_ARGUMENT (naming the field) unless it is a sane relative glob. */
export function validateTrackPattern(pattern: unknown): string {
  const bad = (why: string) => new StrataError('INVALID_ARGUMENT', { message: `pattern ${why}`, details: { field: 'pattern' } });
  if (typeof pattern !== 'string' || pattern === '') throw bad('must be a non-empty string');
  if (pattern.length > MAX_PATTERN_LENGTH) throw bad(`must be at most ${MAX_PATTERN_LENGTH} characters`);
  const unsafe = unsafeCharacterReason(pattern);
  if (unsafe !== null) throw bad(`must not contain control or invisible formatting characters (it ${unsafe})`);
  if (pattern.startsWith('/')) throw bad('must be relative to the project root');
  if (pattern.split('/').some((segment) => segment === '..' || segment === '.')) throw bad("must not contain '.' or '..' segments");
  if (pattern.endsWith('/')) throw bad("must not end with '/' (use 'dir/**' for everything below a directory)");
  return pattern;
}

export function validateThreshold(value: unknown): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
    throw new StrataError('INVALID_ARGUMENT', { message: 'thresholdBytes must be a non-negative integer (0 = every file is a dataset)', details: { field: 'thresholdBytes' } });
  }
  return value;
}

export function withTracked(rules: DatasetRules, pattern: string): DatasetRules {
  if (rules.tracked.includes(pattern)) return rules;
  if (rules.tracked.length >= MAX_PATTERNS) {
    throw new StrataError('INVALID_ARGUMENT', { message: `a project tracks at most ${MAX_PATTERNS} dataset patterns`, details: { field: 'pattern' } });
  }
  return { ...rules, tracked: [...rules.tracked, pattern] };
}

export function withoutTracked(rules: DatasetRules, pattern: string): DatasetRules {
  return { ...rules, tracked: rules.tracked.filter((p) => p !== pattern) };
}

/** Whether `path` is tracked by a pattern (size aside). */
export function isTracked(rules: DatasetRules, path: string): boolean {
  if (rules.tracked.length === 0) return false;
  // dot: true — a dataset under `.cache/` is still one; compiled per call (rules change rarely, and
  // this runs once per large write, never per small one: see isDataset).
  return picomatch(rules.tracked, { dot: true })(path);
}

/**
 * Whether a file of `size` bytes at `path` is stored as a dataset. `size` null = not known yet (a
 * stream): only the tracked patterns decide then.
 */
export function isDataset(rules: DatasetRules, path: string, size: number | null): boolean {
  if (size !== null && size > rules.thresholdBytes) return true;
  return isTracked(rules, path);
}
