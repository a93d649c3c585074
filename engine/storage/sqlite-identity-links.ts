// People's sign-ins and preferences (issue 16): which internal identity an OIDC `(issuer, subject)`
// is, and the small JSON document of a person's settings that `/auth/me` returns.

import type { Database } from 'better-sqlite3';
import { StrataError } from '../errors.js';
import type { AccessRepository } from '../ports/metadata-repository.js';
import type { IdentityLink } from '../types.js';
import { run } from './sqlite-rows.js';

type LinkMethods = Pick<AccessRepository, 'findLinkedIdentity' | 'getPreferences'>;

/** The synchronous writes, for composing into one transaction (sqlite-access.ts applyAccessChanges). */
export interface LinkWrites {
  insertLink(link: IdentityLink): void;
  writePreferences(identityId: string, preferences: Record<string, unknown>): void;
}

export function createSqliteIdentityLinks(db: Database): { methods: LinkMethods; writes: LinkWrites } {
  const linkedIdentity = db.prepare('SELECT identity_id FROM identity_links WHERE issuer = ? AND subject = ?').pluck();
  const insertLinkRow = db.prepare('INSERT OR IGNORE INTO identity_links (issuer, subject, identity_id, created_at) VALUES (?, ?, ?, ?)');
  const preferencesOf = db.prepare('SELECT preferences FROM identity_preferences WHERE identity_id = ?').pluck();
  const upsertPreferences = db.prepare(
    'INSERT INTO identity_preferences (identity_id, preferences) VALUES (?, ?) ON CONFLICT (identity_id) DO UPDATE SET preferences = excluded.preferences',
  );
  return {
    methods: {
      findLinkedIdentity: (issuer, subject) => run(() => (linkedIdentity.get(issuer, subject) as string | undefined) ?? null),
      getPreferences: (identityId) =>
        run(() => {
          const text = preferencesOf.get(identityId) as string | undefined;
          return text === undefined ? {} : (JSON.parse(text) as Record<string, unknown>);
        }),
    },
    writes: {
      insertLink(link) {
        if (insertLinkRow.run(link.issuer, link.subject, link.identityId, link.createdAt).changes === 0) {
          throw new StrataError('IDENTITY_LINK_TAKEN', { details: { issuer: link.issuer } });
        }
      },
      writePreferences(identityId, preferences) {
        upsertPreferences.run(identityId, JSON.stringify(preferences));
      },
    },
  };
}
