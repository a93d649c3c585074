// SSO connections: an organization brings its own identity provider. An admin creates the connection
// (issuer, client, audience, email domains), proves each domain with a DNS TXT record, proves the
// issuer with a test sign-in (an access token of a person from it), and only then activates it. From
// then on `/auth/resolve` sends people with those email domains to that issuer, and its tokens
// authenticate here as members of that organization (created on first sign-in).

import { randomBytes } from 'node:crypto';
import { resolveTxt } from 'node:dns/promises';
import { StrataError } from '../errors.js';
import { isoTimestamp } from '../ports/world.js';
import type { SsoConnection } from '../types.js';
import { auditChange } from './audit.js';
import { authorizeOrg } from './authorize.js';
import type { Principal } from './context.js';
import type { AccessDeps } from './deps.js';
import type { HostedSignIn, SignInRoute } from './resolve.js';
import { createTokenVerifier, type TokenVerifier, type TrustedIssuer } from './token-verifier.js';

/** The TXT record a domain publishes: `strata-domain-verification=<token>`. */
export const TXT_PREFIX = 'strata-domain-verification=';
const DOMAIN = /^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$/;
const MAX_DOMAINS = 50;

/** DNS TXT lookups, injectable (tests, split-horizon DNS): the shape of node:dns/promises resolveTxt. */
export type TxtResolver = (name: string) => Promise<string[][]>;

export const systemTxtResolver: TxtResolver = resolveTxt;

export interface CreateSsoInput {
  orgId: string;
  issuer: string;
  clientId: string;
  audience: string;
  tokenType?: 'at+jwt' | 'any';
  scopes?: string[];
  domains: string[];
}

function invalid(field: string, message: string): StrataError {
  return new StrataError('INVALID_ARGUMENT', { message, details: { field } });
}

/** An issuer URL tokens may be trusted from: https, or http on this machine only. */
export function checkIssuerUrl(issuer: string, field = 'issuer'): void {
  let url: URL;
  try {
    url = new URL(issuer);
  } catch {
    throw invalid(field, `the issuer must be a URL, got '${issuer}'`);
  }
  const loopback = url.hostname === '127.0.0.1' || url.hostname === 'localhost' || url.hostname === '[::1]';
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && loopback)) throw invalid(field, 'the issuer must use https (http only on loopback)');
  if (url.username !== '' || url.password !== '' || url.search !== '' || url.hash !== '') throw invalid(field, 'the issuer must not carry credentials, a query or a fragment');
}

export function normalizeDomain(domain: string, field = 'domains'): string {
  const lower = domain.trim().toLowerCase().replace(/\.$/, '');
  if (!DOMAIN.test(lower)) throw invalid(field, `'${domain}' is not a domain name`);
  return lower;
}

async function connectionOf(deps: AccessDeps, principal: Principal, orgId: string, connectionId: string): Promise<SsoConnection> {
  await authorizeOrg(deps, principal, orgId, 'manage');
  const connection = await deps.repository.access.getSsoConnection(connectionId);
  if (connection === null || connection.orgId !== orgId) throw new StrataError('SSO_CONNECTION_NOT_FOUND', { details: { connectionId } });
  return connection;
}

function audit(deps: AccessDeps, principal: Principal, connection: SsoConnection, action: string, details: Record<string, string | number | boolean | null> = {}) {
  return auditChange(deps, {
    orgId: connection.orgId,
    actorId: principal.identity.identityId,
    action,
    target: connection.connectionId,
    details: { connectionId: connection.connectionId, issuer: connection.issuer, ...details },
  });
}

export async function createSsoConnection(deps: AccessDeps, principal: Principal, input: CreateSsoInput, hosted: HostedSignIn | undefined): Promise<SsoConnection> {
  await authorizeOrg(deps, principal, input.orgId, 'manage');
  checkIssuerUrl(input.issuer);
  if (hosted !== undefined && input.issuer === hosted.issuer) throw invalid('issuer', 'this is the hosted identity of the server; an SSO connection is for an organization’s own issuer');
  const domains = [...new Set(input.domains.map((d) => normalizeDomain(d)))];
  if (domains.length === 0 || domains.length > MAX_DOMAINS) throw invalid('domains', `give 1 to ${MAX_DOMAINS} email domains`);
  const connection: SsoConnection = {
    connectionId: deps.ids.uuid(),
    orgId: input.orgId,
    issuer: input.issuer,
    clientId: input.clientId,
    audience: input.audience,
    tokenType: input.tokenType ?? 'at+jwt',
    scopes: input.scopes ?? ['openid', 'offline_access'],
    domains: domains.map((domain) => ({ domain, verificationToken: randomBytes(18).toString('base64url'), verifiedAt: null })),
    testedAt: null,
    testedSubject: null,
    active: false,
    activatedAt: null,
    createdAt: isoTimestamp(deps.clock),
  };
  await deps.repository.access.applyAccessChanges([
    { kind: 'putSsoConnection', connection },
    audit(deps, principal, connection, 'sso.create', { domains: domains.join(' ') }),
  ]);
  return connection;
}

export async function listSsoConnections(deps: AccessDeps, principal: Principal, orgId: string): Promise<SsoConnection[]> {
  await authorizeOrg(deps, principal, orgId, 'manage');
  return deps.repository.access.listSsoConnections(orgId);
}

export async function getSsoConnection(deps: AccessDeps, principal: Principal, orgId: string, connectionId: string): Promise<SsoConnection> {
  return connectionOf(deps, principal, orgId, connectionId);
}

/** Looks the domain's TXT records up; verified when one is exactly `strata-domain-verification=<token>`. */
export async function verifySsoDomain(
  deps: AccessDeps,
  principal: Principal,
  input: { orgId: string; connectionId: string; domain: string },
  resolver: TxtResolver,
): Promise<SsoConnection> {
  const connection = await connectionOf(deps, principal, input.orgId, input.connectionId);
  const domain = normalizeDomain(input.domain, 'domain');
  const entry = connection.domains.find((d) => d.domain === domain);
  if (entry === undefined) throw invalid('domain', `${domain} is not a domain of this connection`);
  const expected = `${TXT_PREFIX}${entry.verificationToken}`;
  let records: string[][] = [];
  try {
    records = await resolver(domain);
  } catch {
    // NXDOMAIN, no TXT records, resolver down: all "not found" to the admin, who can retry.
  }
  if (!records.some((chunks) => chunks.join('') === expected)) {
    throw new StrataError('SSO_DOMAIN_NOT_VERIFIED', {
      message: `No TXT record '${expected}' on ${domain} (DNS changes can take a while to appear)`,
      details: { domain, record: expected },
    });
  }
  if (entry.verifiedAt !== null) return connection;
  const verifiedAt = isoTimestamp(deps.clock);
  const next: SsoConnection = { ...connection, domains: connection.domains.map((d) => (d.domain === domain ? { ...d, verifiedAt } : d)) };
  await deps.repository.access.applyAccessChanges([
    { kind: 'requireDomainUnclaimed', domain, connectionId: connection.connectionId },
    { kind: 'putSsoConnection', connection: next },
    audit(deps, principal, next, 'sso.domain-verify', { domain }),
  ]);
  return next;
}

/** The issuer entry a connection's tokens are verified against. */
export function connectionIssuer(connection: SsoConnection): TrustedIssuer {
  return { issuer: connection.issuer, audience: connection.audience, tokenType: connection.tokenType, orgId: connection.orgId };
}

/**
 * A test sign-in: an access token a person got from the connection's issuer (for example with
 * `strata login --test-sso`) must verify against the connection as configured — issuer, audience,
 * keys, token type — before the connection can be activated.
 */
export async function testSsoConnection(
  deps: AccessDeps,
  principal: Principal,
  input: { orgId: string; connectionId: string; accessToken: string },
  makeVerifier: (trusted: TrustedIssuer) => TokenVerifier = (trusted) =>
    createTokenVerifier({ clock: deps.clock, trustedIssuer: async (iss) => (iss === trusted.issuer ? trusted : null) }),
): Promise<SsoConnection> {
  const connection = await connectionOf(deps, principal, input.orgId, input.connectionId);
  let subject: string;
  try {
    const verified = await makeVerifier(connectionIssuer(connection)).verify(input.accessToken);
    if (verified.service) throw new Error('a client-credentials token has no person behind it');
    subject = verified.subject;
  } catch {
    throw new StrataError('SSO_TEST_FAILED', { details: { issuer: connection.issuer, audience: connection.audience, tokenType: connection.tokenType } });
  }
  const next: SsoConnection = { ...connection, testedAt: isoTimestamp(deps.clock), testedSubject: subject };
  await deps.repository.access.applyAccessChanges([{ kind: 'putSsoConnection', connection: next }, audit(deps, principal, next, 'sso.test', { subject })]);
  return next;
}

export async function setSsoActive(deps: AccessDeps, principal: Principal, input: { orgId: string; connectionId: string; active: boolean }): Promise<SsoConnection> {
  const connection = await connectionOf(deps, principal, input.orgId, input.connectionId);
  if (connection.active === input.active) return connection;
  const verified = connection.domains.filter((d) => d.verifiedAt !== null);
  if (input.active && (verified.length === 0 || connection.testedAt === null)) {
    throw new StrataError('SSO_NOT_READY', {
      details: { verifiedDomains: verified.length, tested: connection.testedAt !== null },
    });
  }
  const next: SsoConnection = { ...connection, active: input.active, activatedAt: input.active ? isoTimestamp(deps.clock) : connection.activatedAt };
  await deps.repository.access.applyAccessChanges([
    ...(input.active ? [{ kind: 'requireIssuerUnclaimed' as const, issuer: connection.issuer, connectionId: connection.connectionId }] : []),
    // Browser sessions its sign-ins opened end with it, like its tokens.
    ...(input.active ? [] : [{ kind: 'revokeWebSessions' as const, at: isoTimestamp(deps.clock), orgId: connection.orgId }]),
    { kind: 'putSsoConnection', connection: next },
    audit(deps, principal, next, input.active ? 'sso.activate' : 'sso.deactivate'),
  ]);
  return next;
}

/** Where an email signs in: its domain's active connection, else the hosted identity. */
export async function resolveSignInRoute(deps: AccessDeps, hosted: HostedSignIn | undefined, email: string): Promise<SignInRoute> {
  const domain = email.slice(email.lastIndexOf('@') + 1).toLowerCase();
  const connection = await deps.repository.access.findSsoConnectionForDomain(domain);
  if (connection !== null) {
    return { mode: 'sso', issuer: connection.issuer, clientId: connection.clientId, audience: connection.audience, scopes: connection.scopes, orgId: connection.orgId };
  }
  if (hosted === undefined) throw new StrataError('SIGN_IN_NOT_CONFIGURED', { details: { email } });
  return { mode: 'hosted', issuer: hosted.issuer, clientId: hosted.clientId, audience: hosted.audience, scopes: hosted.scopes, orgId: null };
}

export interface SignInDiagnosis {
  email: string;
  domain: string;
  /** what /auth/resolve answers for this email, or null when nothing would */
  route: SignInRoute | null;
  reason: string;
  /** this organization's connections and how each relates to the domain */
  connections: Array<{ connectionId: string; issuer: string; active: boolean; tested: boolean; domainListed: boolean; domainVerified: boolean }>;
}

/** For an org admin: which issuer applies to an email, and why (or why not theirs). */
export async function diagnoseSignIn(deps: AccessDeps, principal: Principal, orgId: string, email: string, hosted: HostedSignIn | undefined): Promise<SignInDiagnosis> {
  await authorizeOrg(deps, principal, orgId, 'manage');
  const domain = email.slice(email.lastIndexOf('@') + 1).toLowerCase();
  const connections = (await deps.repository.access.listSsoConnections(orgId)).map((c) => {
    const entry = c.domains.find((d) => d.domain === domain);
    return { connectionId: c.connectionId, issuer: c.issuer, active: c.active, tested: c.testedAt !== null, domainListed: entry !== undefined, domainVerified: entry?.verifiedAt != null };
  });
  const winner = await deps.repository.access.findSsoConnectionForDomain(domain);
  let route: SignInRoute | null = null;
  let reason: string;
  if (winner !== null) {
    route = { mode: 'sso', issuer: winner.issuer, clientId: winner.clientId, audience: winner.audience, scopes: winner.scopes, orgId: winner.orgId };
    reason = winner.orgId === orgId ? `${domain} is verified on active connection ${winner.connectionId}: people sign in at ${winner.issuer}` : `${domain} is verified and active for another organization`;
    if (winner.orgId !== orgId) route = null;
  } else {
    const mine = connections.find((c) => c.domainListed);
    if (mine === undefined) reason = `no connection of this organization lists ${domain}`;
    else if (!mine.domainVerified) reason = `${domain} is listed on connection ${mine.connectionId} but not verified (publish its TXT record, then verify)`;
    else reason = `${domain} is verified on connection ${mine.connectionId}, which is not active${mine.tested ? '' : ' (and has no successful test sign-in)'}`;
    if (hosted !== undefined) {
      route = { mode: 'hosted', issuer: hosted.issuer, clientId: hosted.clientId, audience: hosted.audience, scopes: hosted.scopes, orgId: null };
      reason += `; they use the hosted identity (${hosted.issuer})`;
    } else {
      reason += '; and this server has no hosted identity, so they cannot sign in';
    }
  }
  return { email, domain, route, reason, connections };
}
