// Route schemas are TypeBox (JSON Schema) with additionalProperties: false. Bodies are validated as
// sent — no coercion, nothing removed — so `{"maxVersions": "5"}` or an unknown field is a 400 naming
// the field, never silently "fixed". Query strings and path parameters arrive as text and are
// converted to the schema's types first (`?limit=5` → 5).

import type { FastifySchemaCompiler } from 'fastify';
import type { TSchema } from 'typebox';
import { Compile } from 'typebox/compile';
import { Value } from 'typebox/value';
import { type ErrorCode, StrataError } from '../engine/errors.js';

interface SchemaIssue {
  keyword: string;
  instancePath: string;
  params: Record<string, unknown>;
  message: string;
}

const PART_CODE: Record<string, ErrorCode> = {
  body: 'INVALID_BODY',
  querystring: 'INVALID_QUERY',
  params: 'INVALID_ARGUMENT',
  headers: 'INVALID_ARGUMENT',
};

function pointerToField(pointer: string): string {
  return pointer
    .split('/')
    .slice(1)
    .map((s) => s.replaceAll('~1', '/').replaceAll('~0', '~'))
    .join('.');
}

function join(base: string, name: string): string {
  return base === '' ? name : `${base}.${name}`;
}

/** The most useful issue first: unknown fields, then missing ones, then the rest. */
export function describeIssues(issues: SchemaIssue[], part: string): StrataError {
  const code = PART_CODE[part] ?? 'INVALID_ARGUMENT';
  const unknown = issues.find((i) => i.keyword === 'additionalProperties');
  if (unknown !== undefined) {
    const names = (unknown.params['additionalProperties'] as string[] | undefined) ?? [];
    const field = join(pointerToField(unknown.instancePath), names[0] ?? '');
    return new StrataError(code, { message: `Unknown field '${field}'`, details: { field, reason: 'unknown field' } });
  }
  const missing = issues.find((i) => i.keyword === 'required');
  if (missing !== undefined) {
    const names = (missing.params['requiredProperties'] as string[] | undefined) ?? [];
    const field = join(pointerToField(missing.instancePath), names[0] ?? '');
    return new StrataError(code, { message: `Missing field '${field}'`, details: { field, reason: 'required' } });
  }
  // Prefer a leaf issue (deepest path): "maxVersions must be integer" rather than "body must match".
  const issue = [...issues].sort((a, b) => b.instancePath.length - a.instancePath.length)[0];
  const field = issue === undefined ? '' : pointerToField(issue.instancePath);
  const reason = issue?.message ?? 'invalid';
  const label = field === '' ? (part === 'body' ? 'The body' : `The ${part}`) : `Field '${field}'`;
  return new StrataError(code, { message: `${label} ${reason}`, details: { field: field === '' ? part : field, reason } });
}

export const validatorCompiler: FastifySchemaCompiler<TSchema> = ({ schema, httpPart }) => {
  const check = Compile(schema);
  const part = httpPart ?? 'body';
  return (value: unknown) => {
    // A route whose body is optional accepts no body at all as `{}` (Fastify passes a missing body as null).
    const input = part === 'body' ? (value === undefined || value === null ? {} : value) : Value.Convert(schema, value);
    if (check.Check(input)) return { value: input };
    return { error: describeIssues([...check.Errors(input)] as SchemaIssue[], part) };
  };
};
