import { StrataError } from './errors.js';
import { extensionOf } from './paths.js';
import type { VersioningPolicy } from './types.js';

export const DEFAULT_POLICY: VersioningPolicy = {
  alwaysExtensions: ['.m', '.py', '.rs', '.json', '.yaml', '.toml', '.md', '.txt'],
  sizeThreshold: 50 * 1024 * 1024,
  largeFileAllowlist: [],
};

/**
 * docs/design.md §2: the always-list is versioned whatever the size; above the threshold only allowlisted
 * extensions are; everything else is versioned. "Not versioned" means the path keeps only its current
 * content: its older versions are pruned as the new one lands (snapshot pins still protect them).
 */
export function isVersioned(policy: VersioningPolicy, path: string, size: number): boolean {
  const ext = extensionOf(path);
  if (policy.alwaysExtensions.includes(ext)) return true;
  if (size > policy.sizeThreshold) return policy.largeFileAllowlist.includes(ext);
  return true;
}

const EXTENSION = /^\.[a-z0-9_+-]{1,32}$/;

export function mergePolicy(base: VersioningPolicy, patch: Partial<VersioningPolicy> | undefined): VersioningPolicy {
  const merged: VersioningPolicy = {
    alwaysExtensions: patch?.alwaysExtensions ?? base.alwaysExtensions,
    sizeThreshold: patch?.sizeThreshold ?? base.sizeThreshold,
    largeFileAllowlist: patch?.largeFileAllowlist ?? base.largeFileAllowlist,
  };
  for (const field of ['alwaysExtensions', 'largeFileAllowlist'] as const) {
    const list = merged[field];
    if (!Array.isArray(list) || list.length > 1000) {
      throw new StrataError('INVALID_ARGUMENT', { message: `${field} must be a list of extensions`, details: { field } });
    }
    merged[field] = list.map((ext, i) => {
      const normalized = typeof ext === 'string' ? (ext.startsWith('.') ? ext : `.${ext}`).toLowerCase() : '';
      if (!EXTENSION.test(normalized)) {
        throw new StrataError('INVALID_ARGUMENT', { message: `${field}[${i}] is not an extension like ".mat"`, details: { field: `${field}[${i}]` } });
      }
      return normalized;
    });
  }
  if (!Number.isSafeInteger(merged.sizeThreshold) || merged.sizeThreshold < 0) {
    throw new StrataError('INVALID_ARGUMENT', { message: 'sizeThreshold must be a non-negative integer (bytes)', details: { field: 'sizeThreshold' } });
  }
  return merged;
}
