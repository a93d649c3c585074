// `strata serve`: the control API over a local home. On a loopback address it is the daemon's API
// (loopback Host only, no browser Origin); on any other address it is a network server.

import { createPrivateKey, X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { createSecureContext } from 'node:tls';
import pino from 'pino';
import { buildApp } from '../control-api/app.js';
import { closeDraining } from '../control-api/close-draining.js';
import type { AppLoggerOptions } from '../control-api/logging.js';
import { StrataError } from '../engine/errors.js';
import type { Clock } from '../engine/ports/world.js';
import type { ContentHash } from '../engine/types.js';
import { loadPepper, resolveEnvironment } from './secrets.js';
import type { MetadataRepository } from '../engine/ports/metadata-repository.js';
import { createServerMetrics, serveMetrics } from './metrics.js';
import { openServerEngine, requireSharedPepper, storageUrls } from './server-storage.js';
import { acquireServeLock } from './home-lock.js';
import { type NetworkFlags, networkFromConfig } from './network-config.js';
import { signInFromConfig, type SignInFlags } from './sign-in-config.js';

const LISTEN = /^(\[[0-9a-fA-F:.]+\]|[^:\s[\]]+):(\d{1,5})$/;

export function parseListen(listen: string, field: 'listen' | 'metricsListen' = 'listen'): { host: string; port: number } {
  const match = LISTEN.exec(listen);
  const port = match === null ? Number.NaN : Number(match[2]);
  if (match === null || port > 65535) {
    const what = field === 'listen' ? 'listen' : 'the metrics address (metricsListen, STRATA_METRICS_LISTEN)';
    throw new StrataError('INVALID_ARGUMENT', { message: `${what} must be HOST:PORT, got '${listen}'`, details: { field } });
  }
  const host = match[1]!.startsWith('[') ? match[1]!.slice(1, -1) : match[1]!;
  return { host, port };
}

/**
 * A socket that could not listen (EADDRINUSE, EACCES...), with the address it was for: the API's
 * (`listen`) or the metrics' (`metricsListen`), so that the message names the right one. `code` is
 * the system error's.
 */
export class ListenError extends Error {
  readonly code: string | undefined;

  constructor(
    readonly field: 'listen' | 'metricsListen',
    readonly address: string,
    cause: NodeJS.ErrnoException,
  ) {
    super(`cannot listen on ${address}: ${cause.message}`, { cause });
    this.name = 'ListenError';
    this.code = cause.code;
  }
}

/** A system error of listen() becomes a ListenError naming `address`; anything else passes. */
function listening(field: 'listen' | 'metricsListen', address: string, error: unknown): unknown {
  const system = error as NodeJS.ErrnoException | undefined;
  return system instanceof Error && typeof system.syscall === 'string' ? new ListenError(field, address, system) : error;
}

export function isLoopbackAddress(host: string): boolean {
  if (host === 'localhost') return true;
  if (isIP(host) === 4) return host.startsWith('127.');
  return host === '::1';
}

export async function startServer(options: {
  home: string;
  listen: string;
  logger?: boolean | AppLoggerOptions;
  environment?: string;
  clock?: Clock;
  /** the hosted OIDC identity (flags; the environment fills what they leave out) */
  signIn?: SignInFlags;
  /** rate limits and proxies (flags; the environment fills what they leave out) */
  network?: NetworkFlags;
  /** HOST:PORT for Prometheus metrics (else STRATA_METRICS_LISTEN; none by default) */
  metricsListen?: string;
  /** certificate and key files for HTTPS (else STRATA_TLS_CERT / STRATA_TLS_KEY; none: plain HTTP behind a proxy) */
  tls?: { cert?: string; key?: string };
  /**
   * where settings the options leave out come from (serve-config.ts: the environment over a config
   * file), the storage URLs included (server-storage.ts)
   */
  env?: NodeJS.ProcessEnv;
}): Promise<{ url: string; metricsUrl: string | null; close(): Promise<void> }> {
  const env = options.env ?? process.env;
  const { host, port } = parseListen(options.listen);
  // Checked before anything opens or listens: found after the API listened, a bad metrics address
  // threw past the API server and left it running, unready, on closed storage.
  const metricsListen = options.metricsListen ?? env['STRATA_METRICS_LISTEN'];
  const metricsAt = metricsListen === undefined || metricsListen === '' ? null : { listen: metricsListen, ...parseListen(metricsListen, 'metricsListen') };
  const environment = resolveEnvironment(options.environment, env);
  const signIn = signInFromConfig(options.signIn ?? {}, env);
  const https = readTls(options.tls?.cert ?? env['STRATA_TLS_CERT'], options.tls?.key ?? env['STRATA_TLS_KEY']);
  requireSharedPepper(storageUrls(env), env);
  const pepper = await loadPepper(options.home, { create: true, env });
  // This connects to Redis (--redis), which keeps the process alive: every failure from here on
  // disconnects it, or a server that could not start would keep running.
  const network = networkFromConfig(options.network ?? {}, isLoopbackAddress(host), env);
  // Request logs go to stderr: stdout belongs to the CLI's own (possibly --json) output.
  const logger: AppLoggerOptions | false =
    options.logger === false ? false : options.logger === true || options.logger === undefined ? { level: 'info', stream: pino.destination(2) } : options.logger;
  const metrics = metricsAt === null ? null : createServerMetrics();
  // One server per home, and none while migrate-storage copies it (home-lock.ts): HOME_IN_USE.
  const lock = await acquireServeLock(options.home).catch((error: unknown) => {
    network.rateLimit?.redis?.disconnect();
    throw error;
  });
  const local = await openServerEngine(options.home, env, {
    ...(options.clock === undefined ? {} : { clock: options.clock }),
    ...(metrics === null ? {} : { wrapRepository: (repository: MetadataRepository) => metrics.countVersions(repository) }),
  }).catch(async (error: unknown) => {
    network.rateLimit?.redis?.disconnect();
    await lock.release();
    throw error;
  });
  try {
    const app = await buildApp({
      engine: metrics === null ? local.engine : metrics.countGc(local.engine),
      ...(metrics === null ? {} : { observe: metrics.observe }),
      repository: local.repository,
      pepper,
      environment,
      clock: local.clock,
      logger,
      loopbackOnly: isLoopbackAddress(host),
      ...(signIn === undefined ? {} : { signIn }),
      ...(network.rateLimit === undefined ? {} : { rateLimit: network.rateLimit }),
      ...(network.trustedProxies.length === 0 ? {} : { trustProxy: network.trustedProxies }),
      ...(https === null ? {} : { https }),
      readiness: {
        metadata: () => local.repository.access.listOrganizations(),
        // stat, not has: has() of a shared bucket records a touch (object-guard.ts); a probe must not write.
        // The bucket's own store, not local.store: on Postgres + S3 that asks Postgres first
        // (pg-small-objects.ts), and a database outage read as the bucket's too.
        objects: () => local.objects.stat(`blake3:${'0'.repeat(64)}` as ContentHash),
      },
    });
    let metricsServer: Awaited<ReturnType<typeof serveMetrics>> | null = null;
    // Whatever fails from here closes the API server too: the outer catch closes only the storage.
    try {
      await app.listen({ host, port }).catch((error: unknown) => {
        throw listening('listen', options.listen, error);
      });
      if (metrics !== null && metricsAt !== null) {
        metricsServer = await serveMetrics(metrics, metricsAt.host, metricsAt.port).catch((error: unknown) => {
          throw listening('metricsListen', metricsAt.listen, error);
        });
      }
    } catch (error) {
      await app.close();
      throw error;
    }
    const address = app.server.address();
    const boundPort = typeof address === 'object' && address !== null ? address.port : port;
    const urlHost = isIP(host) === 6 ? `[${host}]` : host;
    return {
      url: `${https === null ? 'http' : 'https'}://${urlHost}:${boundPort}`,
      metricsUrl: metricsServer?.url ?? null,
      async close() {
        try {
          await metricsServer?.close();
          // Requests in flight get 7 s, within the 10 s the CLI gives a stop (cli/commands/serve.ts).
          await closeDraining(app, 7_000);
        } finally {
          await network.rateLimit?.redis?.quit().catch(() => {});
          await local.close().finally(() => lock.release());
        }
      },
    };
  } catch (error) {
    network.rateLimit?.redis?.disconnect();
    await local.close().finally(() => lock.release());
    throw error;
  }
}

/** HTTPS needs both files; one without the other is a mistake worth stopping for. */
function readTls(cert: string | undefined, key: string | undefined): { cert: Buffer; key: Buffer } | null {
  if ((cert === undefined || cert === '') && (key === undefined || key === '')) return null;
  if (cert === undefined || cert === '' || key === undefined || key === '') {
    throw new StrataError('INVALID_ARGUMENT', { message: 'HTTPS needs both --tls-cert and --tls-key', details: { field: cert ? 'tlsKey' : 'tlsCert' } });
  }
  const read = (path: string, field: string) => {
    try {
      return readFileSync(path);
    } catch (error) {
      throw new StrataError('INVALID_ARGUMENT', { message: `cannot read ${path} (${(error as NodeJS.ErrnoException).code ?? 'error'})`, details: { field } });
    }
  };
  const pair = { cert: read(cert, 'tlsCert'), key: read(key, 'tlsKey') };
  // Checked here, each file by name: otherwise the HTTPS server fails later with OpenSSL's words
  // ("PEM routines::no start line") as an INTERNAL error naming neither file. Messages carry the
  // paths and OpenSSL's error code, never a byte of the files.
  const refuse = (message: string, field: string, error: unknown) =>
    new StrataError('INVALID_ARGUMENT', { message: `${message} (${(error as NodeJS.ErrnoException).code ?? 'invalid'})`, details: { field } });
  try {
    new X509Certificate(pair.cert);
  } catch (error) {
    throw refuse(`--tls-cert ${cert} is not a PEM certificate`, 'tlsCert', error);
  }
  try {
    createPrivateKey(pair.key);
  } catch (error) {
    throw refuse(`--tls-key ${key} is not a PEM private key without a passphrase`, 'tlsKey', error);
  }
  try {
    createSecureContext(pair);
  } catch (error) {
    throw refuse(`the key in --tls-key ${key} does not go with the certificate in --tls-cert ${cert}`, 'tlsKey', error);
  }
  return pair;
}
