// SCIM filters (RFC 7644 §3.4.2.2), the part directories send: `attr eq "value"` comparisons joined
// with `and` — `userName eq "a@b.org"`, `externalId eq "…"`, `displayName eq "…"`,
// `emails[type eq "work"].value eq "…"`, `active eq true`. Anything else is SCIM_INVALID_FILTER (400),
// never a silently wrong answer.

import { StrataError } from '../../errors.js';

export interface Comparison {
  /** attribute path, e.g. ['emails', 'value'], with an optional value filter on the first step */
  path: string[];
  /** `emails[type eq "work"]`: only elements whose `type` is `work` */
  where: { attribute: string; value: string } | null;
  value: string | boolean | null;
}

/** Attributes whose values compare case-insensitively (caseExact false in RFC 7643's schemas). */
const CASE_INSENSITIVE = new Set(['username', 'displayname', 'emails.value', 'emails.type', 'name.givenname', 'name.familyname', 'name.formatted']);

function invalid(filter: string, reason: string): StrataError {
  return new StrataError('SCIM_INVALID_FILTER', { details: { filter: filter.slice(0, 200), reason } });
}

const TOKEN = /\s*(?:"((?:[^"\\]|\\.)*)"|(\band\b|\beq\b)|(true|false|null)\b|([A-Za-z][\w:.$-]*(?:\[[^\]]*\])?(?:\.[A-Za-z][\w$-]*)?))/iy;

/** Parses `a eq "x" and b eq "y"` into comparisons (all must hold). */
export function parseFilter(filter: string): Comparison[] {
  if (filter.length > 1_000) throw invalid(filter, 'too long');
  const comparisons: Comparison[] = [];
  let position = 0;
  const next = (): { kind: 'string' | 'keyword' | 'literal' | 'attribute'; text: string } | null => {
    TOKEN.lastIndex = position;
    const match = TOKEN.exec(filter);
    if (match === null) return null;
    position = TOKEN.lastIndex;
    if (match[1] !== undefined) return { kind: 'string', text: JSON.parse(`"${match[1]}"`) as string };
    if (match[2] !== undefined) return { kind: 'keyword', text: match[2].toLowerCase() };
    if (match[3] !== undefined) return { kind: 'literal', text: match[3].toLowerCase() };
    return { kind: 'attribute', text: match[4]! };
  };
  for (;;) {
    const attribute = next();
    const operator = next();
    const value = next();
    if (attribute?.kind !== 'attribute' || operator?.kind !== 'keyword' || operator.text !== 'eq' || value === null || value.kind === 'keyword' || value.kind === 'attribute') {
      throw invalid(filter, 'expected: attribute eq "value"');
    }
    comparisons.push({ ...parseAttributePath(attribute.text, filter), value: value.kind === 'string' ? value.text : value.text === 'null' ? null : value.text === 'true' });
    if (/^\s*$/.test(filter.slice(position))) return comparisons;
    const joiner = next();
    if (joiner?.kind !== 'keyword' || joiner.text !== 'and') throw invalid(filter, 'only `and` joins comparisons');
  }
}

function parseAttributePath(text: string, filter: string): Pick<Comparison, 'path' | 'where'> {
  const match = /^([A-Za-z][\w:.$-]*?)(?:\[\s*([A-Za-z][\w$-]*)\s+eq\s+"([^"]*)"\s*\])?(?:\.([A-Za-z][\w$-]*))?$/i.exec(text);
  if (match === null) throw invalid(filter, `attribute path '${text}' is not supported`);
  const head = match[1]!.split('.');
  const path = match[4] === undefined ? head : [...head, match[4]];
  return { path, where: match[2] === undefined ? null : { attribute: match[2], value: match[3]! } };
}

/** Looks an attribute name up case-insensitively (SCIM attribute names are). */
export function field(object: Record<string, unknown>, name: string): unknown {
  if (name in object) return object[name];
  const lower = name.toLowerCase();
  for (const key of Object.keys(object)) if (key.toLowerCase() === lower) return object[key];
  return undefined;
}

function valuesAt(resource: Record<string, unknown>, comparison: Comparison): unknown[] {
  let current: unknown[] = [resource];
  comparison.path.forEach((step, index) => {
    const nextValues: unknown[] = [];
    for (const item of current) {
      if (item === null || typeof item !== 'object') continue;
      let value = field(item as Record<string, unknown>, step);
      if (index === 0 && comparison.where !== null && Array.isArray(value)) {
        const { attribute, value: wanted } = comparison.where;
        value = value.filter((element) => {
          const got = element !== null && typeof element === 'object' ? field(element as Record<string, unknown>, attribute) : undefined;
          return typeof got === 'string' && got.toLowerCase() === wanted.toLowerCase();
        });
      }
      if (Array.isArray(value)) nextValues.push(...value);
      else if (value !== undefined) nextValues.push(value);
    }
    current = nextValues;
  });
  return current;
}

export function matches(resource: Record<string, unknown>, comparisons: Comparison[]): boolean {
  return comparisons.every((comparison) => {
    const insensitive = CASE_INSENSITIVE.has(comparison.path.join('.').toLowerCase());
    const values = valuesAt(resource, comparison);
    const wanted = comparison.value;
    if (wanted === null) return values.length === 0;
    return values.some((value) => {
      if (typeof wanted === 'boolean') return value === wanted;
      if (typeof value !== 'string') return false;
      return insensitive ? value.toLowerCase() === wanted.toLowerCase() : value === wanted;
    });
  });
}
