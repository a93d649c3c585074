// Collects list pages (`{items, nextCursor?}`, docs/api.md "Pagination") up to a limit, or all.

import type { ApiClient, QueryValue } from './client.js';

/** The API's largest page. */
const MAX_PAGE = 1000;

export interface Collected<T> {
  items: T[];
  /** set when more items exist beyond what was collected */
  nextCursor?: string;
}

export async function collectPages<T>(
  client: ApiClient,
  path: string,
  query: Record<string, QueryValue>,
  limit: number | 'all',
): Promise<Collected<T>> {
  const items: T[] = [];
  let cursor: string | undefined;
  for (;;) {
    const want = limit === 'all' ? MAX_PAGE : Math.min(MAX_PAGE, limit - items.length);
    const page = await client.json<{ items: T[]; nextCursor?: string }>('GET', path, {
      query: { ...query, limit: want, cursor },
    });
    items.push(...page.items);
    cursor = page.nextCursor ?? undefined;
    if (!cursor || page.items.length === 0) return { items };
    if (limit !== 'all' && items.length >= limit) return { items, nextCursor: cursor };
  }
}
