// Sign-in and the caller: `/auth/resolve` (public: which issuer an email signs in with) and
// `/auth/me` (who the credential is, with organizations, memberships and preferences).

import { Type } from 'typebox';
import { describeCaller, updatePreferences } from '../../engine/access/me.js';
import { resolveSignInRoute } from '../../engine/access/sso.js';
import { principalOf } from '../request-context.js';
import { IdentitySchema } from '../resource-schemas.js';
import type { App, RouteDeps } from '../route-deps.js';
import { finishWebSignIn, startWebSignIn, webSignOut } from '../web-sign-in.js';
import { EmptyBody, PreferencesPatch, ProjectAccessSchema, ResolveBody } from '../schemas.js';
import { OrgItem } from './orgs.js';

const tags = ['auth'];

const Preferences = Type.Record(Type.String(), Type.Unknown());
const SignInRouteSchema = Type.Object({
  mode: Type.Union([Type.Literal('hosted'), Type.Literal('sso')]),
  issuer: Type.String(),
  clientId: Type.String(),
  audience: Type.String(),
  scopes: Type.Array(Type.String()),
  orgId: Type.Union([Type.String(), Type.Null()]),
});

export function registerAuthRoutes(app: App, { access, signIn }: RouteDeps): void {
  app.post(
    '/auth/resolve',
    {
      schema: { body: ResolveBody },
      config: {
        public: true,
        doc: {
          summary: 'Where an email signs in: the hosted identity or its organization’s SSO issuer (no auth); for clientKind web, a 303 to that provider',
          tags,
          response: SignInRouteSchema,
        },
      },
    },
    async (request, reply) => {
      const { email, clientKind } = request.body;
      const route = await resolveSignInRoute(access, signIn, email);
      // A browser is sent on to its provider; a CLI or desktop app runs the flow itself.
      if (clientKind === 'web') return startWebSignIn(access, request, reply, route, email);
      return route;
    },
  );

  app.get(
    '/auth/web/callback',
    { config: { public: true, doc: { summary: "The identity provider's redirect back after a browser sign-in: opens a session (HttpOnly cookie)", tags } } },
    async (request, reply) => finishWebSignIn(access, request, reply),
  );

  app.post(
    '/auth/web/logout',
    { schema: { body: EmptyBody }, config: { public: true, doc: { summary: "End the browser's session", tags, status: 204 } } },
    async (request, reply) => webSignOut(access, request, reply),
  );

  app.get(
    '/auth/me',
    {
      config: {
        doc: {
          summary: 'The caller: identity, credential, organizations with roles, project memberships, preferences',
          tags,
          response: Type.Object({
            identity: IdentitySchema,
            authKind: Type.Union([Type.Literal('api-key'), Type.Literal('oidc'), Type.Literal('session')]),
            keyId: Type.Union([Type.String(), Type.Null()]),
            projectScope: Type.Union([Type.String(), Type.Null()]),
            organizations: Type.Array(OrgItem),
            memberships: Type.Array(Type.Object({ projectId: Type.String(), orgId: Type.String(), name: Type.String(), access: ProjectAccessSchema })),
            preferences: Preferences,
          }),
        },
      },
    },
    async (request) => describeCaller(access, principalOf(request)),
  );

  app.patch(
    '/auth/me/preferences',
    {
      schema: { body: PreferencesPatch },
      config: { doc: { summary: "Merge into the caller's preferences (a null value removes the key)", tags, response: Preferences } },
    },
    async (request) => updatePreferences(access, principalOf(request), request.body),
  );
}
