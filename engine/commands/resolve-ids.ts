import type { EngineContext } from '../context.js';
import { StrataError } from '../errors.js';
import { type IdAbbreviation, parseIdReference, shortId } from '../short-ids.js';
import type { Snapshot, VersionRecord } from '../types.js';

// What a person may type where a version or snapshot id is taken (issue 18): the whole id, a unique
// prefix or ending of its hex digits (engine/short-ids.ts), and for a snapshot its tag or its number.
// Resolved here, on the server side, so every client (CLI, UI, scripts with curl) and both
// repositories get the same answer from the same rule, and a client never lists a project's whole
// history to expand six digits.
//
// A whole id is looked up as it is, never abbreviated further: daemons and sync send whole ids, and
// they keep their one indexed read.

/** Candidates asked of the repository per form: enough to name a few in the error. */
const CANDIDATES = 5;

/** The version `ref` names, null when none; AMBIGUOUS_ID when it abbreviates more than one. */
export async function findVersion(ctx: EngineContext, projectId: string, ref: unknown): Promise<VersionRecord | null> {
  if (typeof ref !== 'string' || ref === '') return null;
  const parsed = parseIdReference(ref);
  if (parsed.full !== null) return ctx.repository.versions.get(projectId, parsed.full);
  const ids = await matching(parsed.abbreviations, (abbreviation) => ctx.repository.versions.matchIds(projectId, abbreviation, CANDIDATES));
  if (ids.length === 0) return null;
  if (ids.length === 1) return ctx.repository.versions.get(projectId, ids[0]!);
  const records = await Promise.all(ids.slice(0, CANDIDATES).map((id) => ctx.repository.versions.get(projectId, id)));
  throw ambiguous(ref, 'version', ids, records.map((v) => (v === null ? null : `${shortId(v.versionId)} (${v.path})`)));
}

/**
 * The snapshot `ref` names: a whole id, a tag, a number (seq), or an abbreviated id. A tag is a name
 * someone chose, so it wins over reading the same text as a number or digits of an id (as a git ref
 * wins over an abbreviated hash); a number and an abbreviation that name different snapshots are
 * AMBIGUOUS_ID.
 */
export async function findSnapshot(ctx: EngineContext, projectId: string, ref: unknown): Promise<Snapshot | null> {
  if (typeof ref !== 'string' || ref === '') return null;
  const parsed = parseIdReference(ref);
  if (parsed.full !== null) return ctx.repository.snapshots.get(projectId, parsed.full);
  const tagged = await ctx.repository.snapshots.resolveTag(projectId, ref);
  if (tagged !== null) return tagged;
  const found = new Map<string, Snapshot | null>();
  if (parsed.seq !== null) {
    const [bySeq] = await ctx.repository.snapshots.listAfter(projectId, parsed.seq - 1, 1);
    if (bySeq !== undefined && bySeq.seq === parsed.seq) found.set(bySeq.snapshotId, bySeq);
  }
  for (const id of await matching(parsed.abbreviations, (abbreviation) => ctx.repository.snapshots.matchIds(projectId, abbreviation, CANDIDATES))) {
    if (!found.has(id)) found.set(id, null);
  }
  const ids = [...found.keys()];
  if (ids.length === 0) return null;
  const snapshots = await Promise.all(ids.slice(0, CANDIDATES).map(async (id) => found.get(id) ?? ctx.repository.snapshots.get(projectId, id)));
  if (ids.length === 1) return snapshots[0] ?? null;
  throw ambiguous(ref, 'snapshot', ids, snapshots.map((s) => (s === null ? null : `${s.seq} (${shortId(s.snapshotId)})`)));
}

/** Ids matched by any form, each once, in id order. */
async function matching(abbreviations: IdAbbreviation[], match: (abbreviation: IdAbbreviation) => Promise<string[]>): Promise<string[]> {
  const ids = new Set<string>();
  for (const abbreviation of abbreviations) for (const id of await match(abbreviation)) ids.add(id);
  return [...ids].sort();
}

function ambiguous(ref: string, kind: 'version' | 'snapshot', ids: string[], labels: Array<string | null>): StrataError {
  const named = labels.filter((label): label is string => label !== null);
  const more = ids.length > named.length ? ', …' : '';
  return new StrataError('AMBIGUOUS_ID', {
    message: `'${ref}' matches more than one ${kind}: ${named.join(', ')}${more}; give more digits`,
    details: { id: ref, kind, candidates: ids.slice(0, CANDIDATES) },
  });
}
