// A strict query-string parser. The default one leaves an undecodable value such as `%FF` as the
// literal text "%FF" — a different, valid file name than the one the client meant. Here a value
// that is not percent-encoded UTF-8 is dropped and its key remembered, so a hook can reject the
// request naming the field (the router calls the parser, where throwing is not an option).

export const INVALID_QUERY_KEYS: unique symbol = Symbol('strata.invalidQueryKeys');

export type ParsedQuery = Record<string, string | string[]> & { [INVALID_QUERY_KEYS]?: string[] };

function decode(text: string): string | null {
  try {
    return decodeURIComponent(text.replaceAll('+', ' '));
  } catch {
    // URIError: malformed percent-encoding or bytes that are not UTF-8 — reported by the caller.
    return null;
  }
}

export function parseQueryString(text: string): ParsedQuery {
  const result: ParsedQuery = Object.create(null);
  const invalid: string[] = [];
  for (const part of text.split('&')) {
    if (part === '') continue;
    const eq = part.indexOf('=');
    const key = decode(eq === -1 ? part : part.slice(0, eq));
    const value = decode(eq === -1 ? '' : part.slice(eq + 1));
    if (key === null) {
      invalid.push('(name)');
      continue;
    }
    if (value === null) {
      invalid.push(key);
      continue;
    }
    const existing = result[key];
    if (existing === undefined) result[key] = value;
    else if (Array.isArray(existing)) existing.push(value);
    else result[key] = [existing, value];
  }
  if (invalid.length > 0) Object.defineProperty(result, INVALID_QUERY_KEYS, { value: invalid, enumerable: false });
  return result;
}

export function invalidQueryKeys(query: unknown): string[] {
  if (typeof query !== 'object' || query === null) return [];
  return (query as { [INVALID_QUERY_KEYS]?: string[] })[INVALID_QUERY_KEYS] ?? [];
}
