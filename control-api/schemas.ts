// Request schemas (TypeBox = JSON Schema). Bodies and query strings are closed (additionalProperties:
// false): an unknown field is a 400 naming it. The OpenAPI document is generated from these.

import { type TSchema, Type } from 'typebox';

const closed = { additionalProperties: false } as const;

export const Id = Type.String({ minLength: 1, maxLength: 128 });
/** A project path as sent; normalized (and rejected with INVALID_PATH) by normalizeProjectPath. */
export const PathText = Type.String({ maxLength: 8192, description: 'project path, relative, "/"-separated' });
export const Cursor = Type.String({ minLength: 1, maxLength: 2048 });
export const Limit = Type.Integer({ minimum: 1, maximum: 1000, default: 100 });
export const OrgRoleSchema = Type.Union([Type.Literal('owner'), Type.Literal('admin'), Type.Literal('member'), Type.Literal('viewer')]);
export const ProjectAccessSchema = Type.Union([Type.Literal('read'), Type.Literal('write')]);
// Git-compatible and URL-safe: letters, digits, '.', '_', '-'; not starting with '.' or '-'.
export const TagName = Type.String({ pattern: '^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$' });
export const EmptyBody = Type.Object({}, closed);

export function params<P extends Record<string, TSchema>>(properties: P) {
  return Type.Object(properties, closed);
}

export const ProjectParams = params({ projectId: Id });
export const PageQuery = Type.Object({ cursor: Type.Optional(Cursor), limit: Type.Optional(Limit) }, closed);

// --- projects
export const CreateProjectBody = Type.Object({ name: Type.String({ minLength: 1, maxLength: 200 }), orgId: Type.Optional(Id) }, closed);
export const ListProjectsQuery = Type.Object({ orgId: Type.Optional(Id) }, closed);
const Extension = Type.String({ pattern: '^\\.[a-z0-9_+-]{1,32}$' });
export const PolicyBody = Type.Object(
  {
    alwaysExtensions: Type.Optional(Type.Array(Extension, { maxItems: 256 })),
    sizeThreshold: Type.Optional(Type.Integer({ minimum: 0 })),
    largeFileAllowlist: Type.Optional(Type.Array(Extension, { maxItems: 256 })),
  },
  closed,
);

// --- files
export const WriteQuery = Type.Object(
  {
    path: PathText,
    baseVersionId: Type.Optional(Type.String({ maxLength: 128, description: 'empty = the path must not exist' })),
    executable: Type.Optional(Type.Boolean({ description: 'the exec bit of the new version (default false)' })),
    symlink: Type.Optional(
      Type.Boolean({ description: 'the body is a symbolic link target (1 to 4,095 bytes, no NUL): the new version is a link (default false)' }),
    ),
  },
  closed,
);
export const ReadQuery = Type.Object({ path: Type.Optional(PathText), versionId: Type.Optional(Id) }, closed);
export const PathQuery = Type.Object({ path: PathText }, closed);
export const DirQuery = Type.Object(
  { path: Type.Optional(PathText), at: Type.Optional(Type.String({ maxLength: 40, description: 'an ISO-8601 time: the directory as it was then' })) },
  closed,
);
export const DeleteBody = Type.Object({ path: PathText, baseVersionId: Type.Optional(Type.Union([Id, Type.Null()])) }, closed);
export const RenameBody = Type.Object({ from: PathText, to: PathText, overwrite: Type.Optional(Type.Boolean()) }, closed);

// --- history
export const HistoryQuery = Type.Object({ path: Type.Optional(PathText), cursor: Type.Optional(Cursor), limit: Type.Optional(Limit) }, closed);
export const VersionParams = params({ projectId: Id, versionId: Id });
export const RestoreVersionBody = Type.Object({ versionId: Id }, closed);

// --- snapshots and tags
export const SnapshotParams = params({ projectId: Id, snapshotId: Id });
export const TagParams = params({ projectId: Id, tag: Type.String({ minLength: 1, maxLength: 128 }) });
export const CreateSnapshotBody = Type.Object({ message: Type.Optional(Type.String({ maxLength: 10_000 })) }, closed);
export const EntriesQuery = Type.Object({ prefix: Type.Optional(PathText), cursor: Type.Optional(Cursor), limit: Type.Optional(Limit) }, closed);
export const DiffQuery = Type.Object({ to: Type.Optional(Id) }, closed);
export const AddTagBody = Type.Object({ tag: TagName }, closed);

// --- retention
export const RetentionBody = Type.Object(
  {
    maxVersions: Type.Integer({ minimum: 0, maximum: 1_000_000, description: '0 = unlimited' }),
    dryRun: Type.Optional(Type.Boolean({ description: 'say what the setting would prune now; change nothing' })),
  },
  closed,
);
export const DatasetPatternBody = Type.Object({ pattern: Type.String({ minLength: 1, maxLength: 1024, description: 'a project-relative path or glob' }) }, closed);
export const DatasetThresholdBody = Type.Object(
  { thresholdBytes: Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER, description: 'files larger than this are datasets' }) },
  closed,
);
export const DatasetHistoryQuery = Type.Object({ path: PathText, cursor: Type.Optional(Cursor), limit: Type.Optional(Limit) }, closed);

// --- organizations, members, keys
export const OrgParams = params({ orgId: Id });
export const OrgMemberParams = params({ orgId: Id, identityId: Id });
export const ProjectMemberParams = params({ projectId: Id, identityId: Id });
export const EmailText = Type.String({ maxLength: 320, pattern: '^[^@\\s]+@[^@\\s]+\\.[^@\\s]+$' });
export const CreateIdentityBody = Type.Object(
  {
    kind: Type.Union([Type.Literal('user'), Type.Literal('service')]),
    name: Type.String({ minLength: 1, maxLength: 200 }),
    email: Type.Optional(Type.String({ maxLength: 320, pattern: '^[^@\\s]+@[^@\\s]+$' })),
    role: Type.Optional(OrgRoleSchema),
  },
  closed,
);
// --- sign-in
export const ResolveBody = Type.Object(
  { email: EmailText, clientKind: Type.Union([Type.Literal('web'), Type.Literal('cli'), Type.Literal('desktop')]) },
  closed,
);
// --- SSO connections
export const SsoParams = params({ orgId: Id, connectionId: Id });
export const SsoDomainParams = params({ orgId: Id, connectionId: Id, domain: Type.String({ minLength: 1, maxLength: 253 }) });
export const CreateSsoBody = Type.Object(
  {
    issuer: Type.String({ minLength: 1, maxLength: 2048 }),
    clientId: Type.String({ minLength: 1, maxLength: 256 }),
    audience: Type.String({ minLength: 1, maxLength: 2048 }),
    tokenType: Type.Optional(Type.Union([Type.Literal('at+jwt'), Type.Literal('any')])),
    scopes: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 100, pattern: '^[\\x21\\x23-\\x5B\\x5D-\\x7E]+$' }), { minItems: 1, maxItems: 20 })),
    domains: Type.Array(Type.String({ minLength: 1, maxLength: 253 }), { minItems: 1, maxItems: 50 }),
  },
  closed,
);
export const TestSsoBody = Type.Object({ accessToken: Type.String({ minLength: 1, maxLength: 16_384 }) }, closed);
export const DiagnoseQuery = Type.Object({ email: EmailText }, closed);
/** A merge patch of preferences: keys set to null are removed. */
export const PreferencesPatch = Type.Record(Type.String({ minLength: 1, maxLength: 100 }), Type.Unknown(), { maxProperties: 100 });
export const SetRoleBody = Type.Object({ role: OrgRoleSchema }, closed);
export const SetAccessBody = Type.Object({ access: ProjectAccessSchema }, closed);
export const KeyParams = params({ keyId: Id });
export const CreateKeyBody = Type.Object(
  {
    purpose: Type.String({ minLength: 1, maxLength: 200 }),
    orgId: Type.Optional(Id),
    projectId: Type.Optional(Id),
    role: Type.Optional(OrgRoleSchema),
    expiresInDays: Type.Optional(Type.Integer({ minimum: 1, maximum: 3650 })),
    /** CI keys that live for a job or a day (exclusive with expiresInDays) */
    expiresInHours: Type.Optional(Type.Integer({ minimum: 1, maximum: 87_600 })),
    rotateInDays: Type.Optional(Type.Integer({ minimum: 1, maximum: 3650 })),
    /** self: the key acts as its creator (the default for a person); service: as a new service identity */
    actAs: Type.Optional(Type.Union([Type.Literal('self'), Type.Literal('service')])),
  },
  closed,
);
export const ListKeysQuery = Type.Object({ orgId: Type.Optional(Id) }, closed);
export const RotateKeyBody = Type.Object({ graceSeconds: Type.Optional(Type.Integer({ minimum: 0, maximum: 30 * 86_400 })) }, closed);
