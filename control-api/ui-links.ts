// One-time sign-in links for the history browser (`strata ui`). The CLI, already holding a credential,
// asks for a link; the browser opens it once, within a minute, and gets a session whose id lives only
// in an HttpOnly, SameSite=Strict cookie. So no lasting credential is ever in a URL: the link that
// stays in the browser's history is spent.
//
// Links live in this process's memory (the daemon is one process; a server replica honours only the
// links it issued). A link is kept under the SHA-256 of its token, so looking one up compares no
// secret byte by byte, and it is deleted by the lookup that finds it, used or expired.

import { createHash, randomBytes } from 'node:crypto';
import type { Principal } from '../engine/access/context.js';

export const UI_LINK_MS = 60_000;
const MAX_LINKS = 1_000;
const TOKEN_RE = /^[A-Za-z0-9_-]{43}$/;

export interface UiLinks {
  /** a new link's token for this principal, and when it stops working (epoch ms) */
  issue(principal: Principal): { token: string; expiresAt: number };
  /** the principal of a live token, which is spent by this call; null for anything else */
  redeem(token: string): Principal | null;
}

export function createUiLinks(now: () => number): UiLinks {
  const links = new Map<string, { principal: Principal; expiresAt: number }>();
  const keyOf = (token: string) => createHash('sha256').update(token).digest('base64url');
  const sweep = () => {
    const time = now();
    for (const [key, link] of links) if (link.expiresAt <= time) links.delete(key);
  };
  return {
    issue(principal) {
      sweep();
      // Bounded: a caller minting links in a loop pushes out the oldest, never grows the map.
      if (links.size >= MAX_LINKS) links.delete(links.keys().next().value as string);
      const token = randomBytes(32).toString('base64url');
      const expiresAt = now() + UI_LINK_MS;
      links.set(keyOf(token), { principal, expiresAt });
      return { token, expiresAt };
    },
    redeem(token) {
      if (!TOKEN_RE.test(token)) return null;
      const key = keyOf(token);
      const link = links.get(key);
      links.delete(key);
      if (link === undefined || link.expiresAt <= now()) return null;
      return link.principal;
    },
  };
}
