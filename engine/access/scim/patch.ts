// SCIM PATCH (RFC 7644 §3.5.2) on a resource's JSON: `add`, `replace`, `remove`, in any case (Entra
// sends `Replace`), with a path or without one (Okta sends `{"op":"replace","value":{"active":false}}`).
// Paths: `attr`, `attr.sub`, `urn:…:attr` (an extension's attribute), `emails[type eq "work"].value`,
// `members[value eq "id"]`. Entra removes group members with `{"op":"Remove","path":"members",
// "value":[{"value":"id"}]}`, Okta with the filtered path: both work. Booleans sent as strings
// ("False", Entra before its 2020 fix) become booleans for boolean attributes.

import { StrataError } from '../../errors.js';
import { field } from './filter.js';

export type Resource = Record<string, unknown>;

interface Operation {
  op: 'add' | 'replace' | 'remove';
  path: string | null;
  value: unknown;
}

const BOOLEAN_ATTRIBUTES = new Set(['active', 'primary']);

function invalidPath(path: string, reason: string): StrataError {
  return new StrataError('SCIM_INVALID_PATH', { details: { path: path.slice(0, 200), reason } });
}

function invalidValue(reason: string): StrataError {
  return new StrataError('SCIM_INVALID_VALUE', { details: { reason } });
}

export function parseOperations(body: unknown): Operation[] {
  const operations = (body as { Operations?: unknown } | null)?.Operations ?? (body as { operations?: unknown } | null)?.operations;
  if (!Array.isArray(operations) || operations.length === 0 || operations.length > 1_000) throw invalidValue('Operations must be a non-empty array');
  return operations.map((raw) => {
    const item = raw as { op?: unknown; path?: unknown; value?: unknown } | null;
    const op = typeof item?.op === 'string' ? item.op.toLowerCase() : '';
    if (op !== 'add' && op !== 'replace' && op !== 'remove') throw invalidValue(`op must be add, replace or remove, got '${String(item?.op)}'`);
    if (item?.path !== undefined && typeof item.path !== 'string') throw invalidValue('path must be a string');
    return { op, path: (item?.path as string | undefined) ?? null, value: item?.value };
  });
}

/** Entra's "True"/"False" for booleans, recursively inside objects too. */
function coerce(name: string, value: unknown): unknown {
  if (BOOLEAN_ATTRIBUTES.has(name.toLowerCase()) && typeof value === 'string' && /^(true|false)$/i.test(value)) return value.toLowerCase() === 'true';
  if (Array.isArray(value)) return value.map((item) => coerce(name, item));
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value as Resource).map(([key, inner]) => [key, coerce(key, inner)]));
  }
  return value;
}

/** The existing key for `name` (attribute names are case-insensitive), or `name` itself. */
function keyFor(object: Resource, name: string): string {
  const lower = name.toLowerCase();
  return Object.keys(object).find((key) => key.toLowerCase() === lower) ?? name;
}

interface Path {
  /** the containing object's keys from the resource root, e.g. ['name'] or ['urn:…:User'] */
  parents: string[];
  attribute: string;
  filter: { attribute: string; value: string } | null;
  sub: string | null;
}

function parsePath(path: string): Path {
  let rest = path.trim();
  const parents: string[] = [];
  // An extension's attribute: the URN up to the last colon is the containing object.
  const urn = /^(urn:[^[\]]+):([A-Za-z][\w$-]*(?:\[.*\])?(?:\.[A-Za-z][\w$-]*)?)$/i.exec(rest);
  if (urn !== null) {
    const schemaUrn = urn[1]!;
    // The core schemas' URNs prefix their own attributes: `urn:…:core:2.0:User:userName` is `userName`.
    if (!/:core:2\.0:(User|Group)$/i.test(schemaUrn)) parents.push(schemaUrn);
    rest = urn[2]!;
  }
  const match = /^([A-Za-z][\w$-]*)(?:\[\s*([A-Za-z][\w$-]*)\s+eq\s+"([^"]*)"\s*\])?(?:\.([A-Za-z][\w$-]*))?$/i.exec(rest);
  if (match === null) throw invalidPath(path, 'not an attribute path this server supports');
  const [, head, filterAttribute, filterValue, sub] = match;
  if (filterAttribute === undefined && sub !== undefined) {
    // `name.familyName`: the containing object is `name`.
    return { parents: [...parents, head!], attribute: sub, filter: null, sub: null };
  }
  return { parents, attribute: head!, filter: filterAttribute === undefined ? null : { attribute: filterAttribute, value: filterValue! }, sub: sub ?? null };
}

function container(resource: Resource, parents: string[], create: boolean): Resource | null {
  let current = resource;
  for (const parent of parents) {
    const key = keyFor(current, parent);
    let next = current[key];
    if (next === undefined || next === null) {
      if (!create) return null;
      next = {};
      current[key] = next;
    }
    if (typeof next !== 'object' || Array.isArray(next)) throw invalidPath(parents.join('.'), `${parent} is not an object`);
    current = next as Resource;
  }
  return current;
}

const sameElement = (a: unknown, b: unknown): boolean => {
  if (a !== null && b !== null && typeof a === 'object' && typeof b === 'object') {
    const av = field(a as Resource, 'value');
    const bv = field(b as Resource, 'value');
    if (av !== undefined || bv !== undefined) return av === bv;
  }
  return JSON.stringify(a) === JSON.stringify(b);
};

function matchesFilter(element: unknown, filter: { attribute: string; value: string }): boolean {
  if (element === null || typeof element !== 'object') return false;
  const got = field(element as Resource, filter.attribute);
  return typeof got === 'string' && got.toLowerCase() === filter.value.toLowerCase();
}

function applyWithoutPath(resource: Resource, op: Operation): void {
  if (op.op === 'remove') throw invalidPath('', 'remove needs a path');
  if (op.value === null || typeof op.value !== 'object' || Array.isArray(op.value)) throw invalidValue('without a path, value must be an object');
  for (const [name, raw] of Object.entries(op.value as Resource)) {
    // `{"op":"replace","value":{"name.familyName":"X"}}` (Entra) is a path in a key.
    if (/[.[:]/.test(name)) {
      applyOperation(resource, { op: op.op, path: name, value: raw });
      continue;
    }
    const key = keyFor(resource, name);
    const value = coerce(name, raw);
    const existing = resource[key];
    if (op.op === 'add' && Array.isArray(existing) && Array.isArray(value)) {
      resource[key] = [...existing, ...value.filter((item) => !existing.some((old) => sameElement(old, item)))];
    } else if (op.op === 'add' && existing !== null && typeof existing === 'object' && !Array.isArray(existing) && value !== null && typeof value === 'object' && !Array.isArray(value)) {
      resource[key] = { ...(existing as Resource), ...(value as Resource) };
    } else {
      resource[key] = value;
    }
  }
}

export function applyOperation(resource: Resource, op: Operation): void {
  if (op.path === null || op.path === '') {
    applyWithoutPath(resource, op);
    return;
  }
  const path = parsePath(op.path);
  const target = container(resource, path.parents, op.op !== 'remove');
  if (target === null) return; // removing below something absent: nothing to do
  const key = keyFor(target, path.attribute);
  const value = coerce(path.sub ?? path.attribute, op.value);

  if (path.filter !== null) {
    // emails[type eq "work"].value, members[value eq "id"]
    const list = Array.isArray(target[key]) ? [...(target[key] as unknown[])] : [];
    const filter = path.filter;
    if (op.op === 'remove') {
      target[key] = path.sub === null ? list.filter((element) => !matchesFilter(element, filter)) : list.map((element) => {
        if (!matchesFilter(element, filter)) return element;
        const copy = { ...(element as Resource) };
        delete copy[keyFor(copy, path.sub!)];
        return copy;
      });
      return;
    }
    const index = list.findIndex((element) => matchesFilter(element, filter));
    const base: Resource = index >= 0 ? { ...(list[index] as Resource) } : { [filter.attribute]: filter.value };
    if (path.sub === null) {
      if (value === null || typeof value !== 'object' || Array.isArray(value)) throw invalidValue(`${op.path} needs an object value`);
      Object.assign(base, value);
    } else {
      base[keyFor(base, path.sub)] = value;
    }
    if (index >= 0) list[index] = base;
    else list.push(base);
    target[key] = list;
    return;
  }

  if (op.op === 'remove') {
    const existing = target[key];
    if (Array.isArray(existing) && Array.isArray(value)) {
      // Entra: remove these members (by value) from the list.
      target[key] = existing.filter((old) => !value.some((item) => sameElement(old, item)));
    } else {
      delete target[key];
    }
    return;
  }
  const existing = target[key];
  if (op.op === 'add' && Array.isArray(existing)) {
    const items = Array.isArray(value) ? value : [value];
    target[key] = [...existing, ...items.filter((item) => !existing.some((old) => sameElement(old, item)))];
  } else if (op.op === 'add' && existing !== null && typeof existing === 'object' && value !== null && typeof value === 'object' && !Array.isArray(value)) {
    target[key] = { ...(existing as Resource), ...(value as Resource) };
  } else {
    target[key] = value;
  }
}

/** Applies every operation to a copy of `resource`; all or nothing. */
export function applyPatch(resource: Resource, body: unknown): Resource {
  const copy = structuredClone(resource);
  for (const op of parseOperations(body)) applyOperation(copy, op);
  return copy;
}
