// Identity and access, host-agnostic: the local control API and the multi-user server both use it.

export { formatApiKey, hmacSecret, isValidEnvironment, type ParsedApiKey, parseApiKey } from './api-key-format.js';
export {
  type ApiKeyMetadata,
  type ApiKeyStatus,
  type CreateApiKeyInput,
  createApiKey,
  DEFAULT_ROTATION_GRACE_SECONDS,
  type IssuedApiKey,
  mintApiKey,
  keyMetadata,
  listApiKeys,
  revokeApiKey,
  rotateApiKey,
} from './api-keys.js';
export { audit, auditChange } from './audit.js';
export { authenticateApiKey, bearerCredential, LAST_USED_RESOLUTION_MS, unauthenticated } from './authenticate.js';
export {
  authorizeOrg,
  authorizeProject,
  callerOrganizations,
  defaultOrgId,
  type OrgGrant,
  type ProjectGrant,
  visibleProjects,
} from './authorize.js';
export { type BootstrapResult, bootstrapOrganization } from './bootstrap.js';
export { actorOf, type AuthKind, type Principal, type RequestContext } from './context.js';
export type { AccessDeps } from './deps.js';
export {
  createOrgIdentity,
  listAudit,
  listOrgMembers,
  listProjectMembers,
  removeOrgMember,
  removeProjectAccess,
  setOrgRole,
  setProjectAccess,
} from './members.js';
export { type Action, allows, lowerRole, ORG_ROLES, projectCapability, roleAllows, roleAtLeast } from './roles.js';
