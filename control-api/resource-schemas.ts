// Response shapes, for the OpenAPI document only: responses are serialized with JSON.stringify, so a
// field the engine adds is never silently dropped by a stale schema.

import { type TSchema, Type } from 'typebox';
import { OrgRoleSchema, ProjectAccessSchema } from './schemas.js';

export const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);
const Timestamp = Type.String({ description: 'RFC 3339, UTC' });
const Hash = Type.String({ pattern: '^blake3:[0-9a-f]{64}$' });

export const ActorSchema = Type.Object({
  id: Type.String(),
  kind: Type.Union([Type.Literal('user'), Type.Literal('service'), Type.Literal('local')]),
  name: Type.String(),
});
export const VersionSchema = Type.Object({
  versionId: Type.String(),
  projectId: Type.String(),
  path: Type.String(),
  contentHash: Nullable(Hash),
  size: Type.Integer(),
  actor: ActorSchema,
  timestamp: Timestamp,
  kind: Type.Union(['write', 'delete', 'restore', 'snapshot-restore', 'import'].map((k) => Type.Literal(k))),
  restoredFrom: Nullable(Type.String()),
  executable: Type.Boolean(),
  symlink: Type.Boolean({ description: 'a symbolic link: the content is its target, the bytes readlink returns' }),
  dataset: Type.Boolean({ description: 'stored as a dataset: contentHash names its manifest, size is the assembled size' }),
});
export const EntrySchema = Type.Object({
  path: Type.String(),
  versionId: Type.String(),
  contentHash: Hash,
  size: Type.Integer(),
  timestamp: Timestamp,
  executable: Type.Boolean(),
  symlink: Type.Boolean(),
  dataset: Type.Boolean(),
});
export const WriteResultSchema = Type.Object({ entry: EntrySchema, version: VersionSchema, historyKept: Type.Optional(Type.Boolean()) });
export const SnapshotSchema = Type.Object({
  snapshotId: Type.String(),
  projectId: Type.String(),
  parentId: Nullable(Type.String()),
  seq: Type.Integer(),
  message: Type.String(),
  actor: ActorSchema,
  timestamp: Timestamp,
  tags: Type.Array(Type.String()),
  fileCount: Type.Integer(),
  totalSize: Type.Integer(),
});
export const SnapshotEntrySchema = Type.Object({
  path: Type.String(),
  versionId: Type.String(),
  contentHash: Hash,
  size: Type.Integer(),
  executable: Type.Boolean(),
  symlink: Type.Boolean(),
  dataset: Type.Boolean(),
});
export const DiffSchema = Type.Object({
  from: Type.String(),
  to: Nullable(Type.String()),
  items: Type.Array(
    Type.Object({
      path: Type.String(),
      change: Type.Union([Type.Literal('added'), Type.Literal('removed'), Type.Literal('modified')]),
      before: Nullable(SnapshotEntrySchema),
      after: Nullable(SnapshotEntrySchema),
    }),
  ),
});
export const PolicySchema = Type.Object({
  alwaysExtensions: Type.Array(Type.String()),
  sizeThreshold: Type.Integer(),
  largeFileAllowlist: Type.Array(Type.String()),
});
export const ProjectSchema = Type.Object({
  projectId: Type.String(),
  orgId: Type.String(),
  name: Type.String(),
  createdAt: Timestamp,
  policy: PolicySchema,
  retention: Type.Object({ maxVersions: Type.Integer() }),
  datasets: Type.Object({ tracked: Type.Array(Type.String()), thresholdBytes: Type.Integer() }),
});
export const RetentionSchema = Type.Object({ projectId: Type.String(), maxVersions: Type.Integer() });
export const DirectorySchema = Type.Object({
  path: Type.String(),
  items: Type.Array(
    Type.Object({
      name: Type.String(),
      path: Type.String(),
      type: Type.Union([Type.Literal('file'), Type.Literal('directory')]),
      size: Type.Optional(Type.Integer()),
      versionId: Type.Optional(Type.String()),
      timestamp: Type.Optional(Timestamp),
      symlink: Type.Optional(Type.Boolean({ description: 'files only: a symbolic link' })),
    }),
  ),
});
export const TagSchema = Type.Object({ tag: Type.String(), snapshotId: Type.String() });
export const IdentitySchema = Type.Object({
  identityId: Type.String(),
  kind: Type.Union([Type.Literal('user'), Type.Literal('service')]),
  name: Type.String(),
  email: Nullable(Type.String()),
  createdAt: Timestamp,
});
export const OrgMembershipSchema = Type.Object({ orgId: Type.String(), identityId: Type.String(), role: OrgRoleSchema });
export const ProjectMembershipSchema = Type.Object({ projectId: Type.String(), identityId: Type.String(), access: ProjectAccessSchema });
export const KeySchema = Type.Object({
  keyId: Type.String(),
  environment: Type.String(),
  identityId: Type.String(),
  orgId: Type.String(),
  projectId: Nullable(Type.String()),
  ownerId: Type.String(),
  purpose: Type.String(),
  createdAt: Timestamp,
  expiresAt: Nullable(Timestamp),
  rotateBy: Nullable(Timestamp),
  revokedAt: Nullable(Timestamp),
  lastUsedAt: Nullable(Timestamp),
  replacedBy: Nullable(Type.String()),
  graceUntil: Nullable(Timestamp),
  roleCap: Nullable(OrgRoleSchema),
  role: Nullable(OrgRoleSchema),
  status: Type.Union(['active', 'grace', 'rotated', 'revoked', 'expired'].map((s) => Type.Literal(s))),
});
export const IssuedKeySchema = Type.Object({ apiKey: Type.String({ description: 'shown once' }), key: KeySchema, replaced: Type.Optional(KeySchema) });
export const AuditSchema = Type.Object({
  auditId: Type.String(),
  orgId: Type.String(),
  actorId: Type.String(),
  action: Type.String(),
  target: Type.String(),
  details: Type.Record(Type.String(), Type.Unknown()),
  timestamp: Timestamp,
  requestId: Nullable(Type.String()),
  clientIp: Nullable(Type.String()),
});
export const ErrorSchema = Type.Object({
  error: Type.Object({
    code: Type.String(),
    message: Type.String(),
    details: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
    requestId: Type.String(),
    traceId: Type.Optional(Type.String()),
  }),
});

export function pageOf<T extends TSchema>(item: T) {
  return Type.Object({ items: Type.Array(item), nextCursor: Type.Optional(Type.String()) });
}

export function listOf<T extends TSchema>(item: T) {
  return Type.Object({ items: Type.Array(item) });
}

export const DatasetRulesSchema = Type.Object({ tracked: Type.Array(Type.String()), thresholdBytes: Type.Integer() });
export const ManifestSchema = Type.Object({
  format: Type.Literal('strata.dataset/1'),
  chunker: Type.Object({ algorithm: Type.String(), minSize: Type.Integer(), avgSize: Type.Integer(), maxSize: Type.Integer() }),
  size: Type.Integer(),
  hash: Hash,
  shards: Type.Array(Type.Object({ hash: Hash, size: Type.Integer() })),
});
export const DatasetInfoSchema = Type.Object({ version: VersionSchema, manifestHash: Hash, manifest: ManifestSchema });
export const DatasetHistorySchema = Type.Object({
  items: Type.Array(
    Type.Object({
      version: VersionSchema,
      shardCount: Nullable(Type.Integer()),
      distinctShards: Nullable(Type.Integer()),
      newShards: Nullable(Type.Integer()),
      newBytes: Nullable(Type.Integer({ description: 'bytes of the shards no earlier version of the page had' })),
    }),
  ),
  nextCursor: Type.Optional(Type.String()),
});
