// Sign-in and the caller: `/auth/resolve` (public: which issuer an email signs in with) and
// `/auth/me` (who the credential is, with organizations, memberships and preferences).

import { Type } from 'typebox';
import { describeCaller, updatePreferences } from '../../engine/access/me.js';
import { resolveSignInRoute } from '../../engine/access/sso.js';
import { StrataError } from '../../engine/errors.js';
import { principalOf } from '../request-context.js';
import { IdentitySchema } from '../resource-schemas.js';
import type { App, RouteDeps } from '../route-deps.js';
import { PreferencesPatch, ProjectAccessSchema, ResolveBody } from '../schemas.js';
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
        doc: { summary: 'Where an email signs in: the hosted identity or its organization’s SSO issuer (no auth)', tags, response: SignInRouteSchema },
      },
    },
    async (request) => {
      const { email, clientKind } = request.body;
      if (clientKind === 'web') {
        // The browser sign-in lands with the history browser's pages; until then CLIs and desktops only.
        throw new StrataError('INVALID_ARGUMENT', { message: "clientKind 'web' is not served yet: use 'cli' or 'desktop'", details: { field: 'clientKind' } });
      }
      return resolveSignInRoute(access, signIn, email);
    },
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
            authKind: Type.Union([Type.Literal('api-key'), Type.Literal('oidc')]),
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
