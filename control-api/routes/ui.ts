// The history browser: plain static pages (ui/ at the package root, no build step, nothing from a
// CDN) that call this same API from the browser with a session cookie.
//
//   GET  /               → 303 /ui/
//   GET  /ui/, /ui/NAME  the page and its assets (public: they hold no data)
//   POST /v1/ui/links    a one-time link for the caller (`strata ui`): {url, expiresAt}
//   GET  /ui/open?token= spends the link: a session cookie (HttpOnly, SameSite=Strict), 303 /ui/
//
// The assets are read once at start into a map keyed by file name, and only a name in that map is
// ever served: no request path reaches the filesystem, so traversal is impossible by construction.

import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { extname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyReply } from 'fastify';
import { Type } from 'typebox';
import { keyIsUsable } from '../../engine/access/authenticate.js';
import type { AccessDeps } from '../../engine/access/deps.js';
import { createWebSession } from '../../engine/access/web-sessions.js';
import { StrataError } from '../../engine/errors.js';
import { principalOf } from '../request-context.js';
import type { UiLinks } from '../ui-links.js';
import { SESSION_COOKIE } from '../web-sign-in.js';
import type { App, RouteDeps } from '../route-deps.js';
import { EmptyBody } from '../schemas.js';

const tags = ['ui'];
const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
};
/** Scripts and styles only from this origin; nothing may frame the page (clickjacking a restore). */
const CSP = "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'";
/** The page's one classic script, put inside the page when it is served (see inlineBootScript). */
const BOOT_TAG = '<script src="/ui/boot.js"></script>';

/** The header the page sends its session proof in. */
export const PROOF_HEADER = 'x-strata-ui-proof';

/**
 * Cookies are not scoped by port: a browser sends the daemon's session cookie to every server on
 * 127.0.0.1, including another user's on a shared workstation, who could then replay it. So on the
 * daemon a session cookie counts only with this proof beside it, which only the daemon can compute
 * (an HMAC under its pepper) and only the page of its own origin holds (localStorage is per origin,
 * port included).
 */
export function sessionProof(deps: AccessDeps, cookie: string): string {
  return createHmac('sha256', deps.pepper).update(`strata-ui-proof:${cookie}`).digest('base64url');
}

export function checkSessionProof(deps: AccessDeps, cookie: string, given: string | string[] | undefined): boolean {
  if (typeof given !== 'string') return false;
  const expected = Buffer.from(sessionProof(deps, cookie));
  const actual = Buffer.from(given);
  return actual.length === expected.length && timingSafeEqual(actual, expected);
}

interface Asset {
  body: Buffer;
  type: string;
  /** this asset's Content-Security-Policy */
  csp: string;
}

/** ui/ beside the package's source (running from TypeScript) or beside dist/ (built). */
function uiDirectory(): string | null {
  for (const up of ['../../ui/', '../../../ui/']) {
    const candidate = fileURLToPath(new URL(up, import.meta.url));
    if (existsSync(join(candidate, 'index.html'))) return candidate;
  }
  return null;
}

function loadAssets(): Map<string, Asset> {
  const assets = new Map<string, Asset>();
  const dir = uiDirectory();
  if (dir === null) return assets;
  for (const name of readdirSync(dir)) {
    const type = TYPES[extname(name)];
    if (type !== undefined) assets.set(name, { body: readFileSync(join(dir, name)), type, csp: CSP });
  }
  const page = assets.get('index.html');
  const boot = assets.get('boot.js');
  if (page !== undefined && boot !== undefined) assets.set('index.html', inlineBootScript(page, boot.body));
  return assets;
}

/**
 * boot.js starts the first view's API requests before the modules arrive; inside the page it starts
 * them as soon as the page is parsed instead of a round trip later (~30 ms on a fresh load). The
 * policy then allows exactly that script, by its hash, and still no other inline script.
 */
function inlineBootScript(page: Asset, boot: Buffer): Asset {
  const html = page.body.toString('utf8');
  const script = boot.toString('utf8');
  if (!html.includes(BOOT_TAG) || script.toLowerCase().includes('</script')) return page;
  const hash = createHash('sha256').update(script).digest('base64');
  return {
    ...page,
    body: Buffer.from(html.replace(BOOT_TAG, () => `<script>${script}</script>`)),
    csp: CSP.replace("script-src 'self'", `script-src 'self' 'sha256-${hash}'`),
  };
}

export function registerUiRoutes(app: App, deps: RouteDeps, links: UiLinks): void {
  const assets = loadAssets();
  const publicRoute = (summary: string) => ({ config: { public: true, doc: { summary, tags } } });

  app.get('/', publicRoute('The history browser (redirects to /ui/)'), async (_request, reply) => reply.code(303).header('location', '/ui/').send());

  const serve = (name: string, reply: FastifyReply) => {
    const asset = assets.get(name);
    if (asset === undefined) throw new StrataError('NOT_FOUND', { message: `No page ${name}`, details: { name } });
    return reply
      .type(asset.type)
      .header('cache-control', 'no-cache')
      .header('content-security-policy', asset.csp)
      .header('x-content-type-options', 'nosniff')
      .header('referrer-policy', 'no-referrer')
      .send(asset.body);
  };
  app.get('/ui/', publicRoute('The history browser page'), async (_request, reply) => serve('index.html', reply));
  app.get<{ Params: { name: string } }>(
    '/ui/:name',
    { schema: { params: Type.Object({ name: Type.String({ maxLength: 128 }) }) }, ...publicRoute('A static asset of the history browser') },
    async (request, reply) => serve(request.params.name, reply),
  );

  app.post(
    '/v1/ui/links',
    { schema: { body: EmptyBody }, config: { doc: { summary: 'A one-time sign-in link to the history browser for the caller (valid 60 s, once)', tags, status: 201 } } },
    async (request, reply) => {
      const principal = principalOf(request);
      // A session carries the identity without the credential's limits (web-sessions.ts): a key
      // scoped to one project or capped below its owner's role must not become a wider session.
      if (principal.projectScope !== null || principal.roleCap !== null) {
        throw new StrataError('FORBIDDEN', {
          message: 'A project-scoped or role-capped key cannot open the history browser: use a key without limits, or sign in (strata login)',
          details: { projectScope: principal.projectScope, roleCap: principal.roleCap },
        });
      }
      const { token, expiresAt } = links.issue(principal);
      const url = `${request.protocol}://${request.host}/ui/open?token=${token}`;
      return reply.code(201).header('cache-control', 'no-store').send({ url, expiresAt: new Date(expiresAt).toISOString() });
    },
  );

  app.get<{ Querystring: { token?: string } }>(
    '/ui/open',
    { schema: { querystring: Type.Object({ token: Type.Optional(Type.String({ maxLength: 128 })) }) }, ...publicRoute('Spend a one-time link: a session cookie, then the page') },
    async (request, reply) => {
      const principal = request.query.token === undefined ? null : links.redeem(request.query.token);
      reply.header('cache-control', 'no-store').header('referrer-policy', 'no-referrer');
      // A session opened with a key lives no longer than the key: not past its expiry, and not at all
      // when it was revoked since the link was made (its revocation ends its sessions: api-keys.ts).
      const key = principal?.keyId == null ? null : await deps.access.repository.access.getApiKey(principal.keyId);
      const keyUsable = key === null || keyIsUsable(key, deps.access.environment, deps.access.clock.now());
      if (principal === null || !keyUsable) {
        // A page, not JSON: this is where a person lands from a stale link.
        return reply
          .code(401)
          .type('text/html; charset=utf-8')
          .header('content-security-policy', CSP)
          .send('<!doctype html><meta charset="utf-8"><title>Strata</title><p>This link was used already or has expired. Run <code>strata ui</code> for a new one.</p>');
      }
      const session = await createWebSession(deps.access, principal, key?.expiresAt == null ? undefined : Date.parse(key.expiresAt));
      const secure = request.protocol === 'https' ? '; Secure' : '';
      const maxAge = Math.max(0, Math.floor((session.expiresAt - deps.access.clock.now()) / 1000));
      reply.header('set-cookie', `${SESSION_COOKIE}=${session.cookie}; Path=/; Max-Age=${maxAge}; HttpOnly; SameSite=Strict${secure}`);
      // The proof goes in the fragment, which no server sees; the page moves it to its own storage
      // and removes it from the address bar (see sessionProof).
      return reply.code(303).header('location', `/ui/#proof=${sessionProof(deps.access, session.cookie)}`).send();
    },
  );
}
