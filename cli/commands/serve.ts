import type { Command } from 'commander';
import type { NetworkFlags } from '../../server/network-config.js';
import type { SignInFlags } from '../../server/sign-in-config.js';
import { contextFor } from '../context.js';
import { CliError, EXIT } from '../errors.js';
import { checkListen, type ForegroundLog, runUntilSignal } from '../foreground.js';
import { type LogFormat, logDestination, logFormatOption, resolveLogFormat } from '../log-format.js';
import type { Output } from '../output.js';

export const DEFAULT_LISTEN = '127.0.0.1:7420';
/** A close that hangs (a client holding a stream open) must not keep a stopped service alive. */
const CLOSE_TIMEOUT_MS = 10_000;
/**
 * A signal during start waits this long for start to finish before the process exits 1. Nothing a
 * start holds outlives the process (sockets, database connections; an interrupted migration rolls
 * back), and a start can hang: a bucket that accepts connections and never answers.
 */
const START_GRACE_MS = 2_000;

export function registerServeCommand(program: Command): void {
  program
    .command('serve')
    .description(`serve the HTTP API for a Strata home (default ${DEFAULT_LISTEN}; port 0 picks a free port)`)
    .option('--home <dir>', 'Strata home (default: $STRATA_HOME, else $XDG_DATA_HOME/strata)')
    .option('--listen <host:port>', 'address to listen on', DEFAULT_LISTEN)
    .option('--environment <name>', 'environment tag of keys this server issues')
    .option('--quiet', 'no request log')
    .addOption(logFormatOption())
    .option('--oidc-issuer <url>', 'OIDC issuer people sign in with (env STRATA_OIDC_ISSUER); without it, API keys only')
    .option('--oidc-audience <aud>', 'audience its access tokens carry for this server (env STRATA_OIDC_AUDIENCE)')
    .option('--oidc-client-id <id>', 'public client id `strata login` uses at the issuer (env STRATA_OIDC_CLIENT_ID)')
    .option('--oidc-scopes <scopes>', 'scopes `strata login` asks for (env STRATA_OIDC_SCOPES; default "openid offline_access")')
    .option('--oidc-token-type <type>', "'at+jwt' (default: typed access tokens, RFC 9068) or 'any' (env STRATA_OIDC_TOKEN_TYPE)")
    .option('--rate-limit <N/Ss>', 'requests per credential, e.g. 1000/10s, or off (env STRATA_RATE_LIMIT; default 1000/10s on a network address, off on loopback)')
    .option('--auth-failure-limit <N/Ss>', 'failed authentications per client IP (env STRATA_AUTH_FAILURE_LIMIT; default 20/60s)')
    .option('--redis <url>', 'redis://HOST:PORT to share rate-limit counters between replicas (env STRATA_REDIS_URL)')
    .option('--metrics-listen <host:port>', 'serve Prometheus metrics at http://HOST:PORT/metrics, apart from the API (env STRATA_METRICS_LISTEN)')
    .option('--tls-cert <file>', 'serve HTTPS with this certificate (PEM; env STRATA_TLS_CERT), with --tls-key; without both, plain HTTP behind a TLS proxy')
    .option('--tls-key <file>', 'the certificate’s private key (PEM; env STRATA_TLS_KEY)')
    .option('--database <url>', 'postgres://USER@HOST:PORT/DB[?schema=NAME] for the metadata (env STRATA_DATABASE_URL or _FILE; default: SQLite in the home)')
    .option('--objects <url>', 's3://BUCKET[/PREFIX]?endpoint=URL&region=R for the content (env STRATA_OBJECTS_URL; credentials AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY or _FILE; default: the home)')
    .option('--migrate-only', 'bring the metadata database to the current schema and exit (safe while other replicas start)')
    .option('--config <file>', 'a JSON file of these settings (flags and the environment win over it); secrets as pepperFile / redisUrlFile')
    .option('--trusted-proxies <cidrs>', 'comma-separated proxies whose X-Forwarded-For names the client (env STRATA_TRUSTED_PROXIES)')
    .action(async (options: ServeOptions, command: Command) => {
      const ctx = contextFor(command);
      const { serveEnvironment } = await import('../../server/serve-config.js');
      const env = withStorageFlags(serveEnvironment(options.config), options);
      // --listen's default gives way to a listen address from the environment or the config file.
      const listen = command.getOptionValueSource('listen') === 'default' && env['STRATA_LISTEN'] ? env['STRATA_LISTEN'] : options.listen;
      checkListen(listen);
      checkListen(options.metricsListen, '--metrics-listen');
      const format = resolveLogFormat(options.logFormat);
      const say = await serveLog(format, ctx.output);
      if (options.database !== undefined && hasPassword(options.database)) {
        // Never the URL itself: it holds the password.
        say('warn', '--database puts the database password in your shell history and process list; prefer STRATA_DATABASE_URL_FILE (or databaseUrlFile in --config)');
      }
      const { resolveHome } = await import('../../server/home.js');
      const { ListenError, startServer } = await import('../../server/serve.js');
      const home = resolveHome(options.home, env);
      if (options.migrateOnly === true) {
        const { migrateHome } = await import('../../server/bootstrap.js');
        const migrated = await migrateHome(home, env);
        const where = migrated.database === 'postgres' ? 'Postgres' : home;
        ctx.output.result(migrated, () => ctx.output.line(`${where}: metadata schema at version ${migrated.schemaVersion}${migrated.applied.length === 0 ? ' (already current)' : ` (applied ${migrated.applied.join(', ')})`}`));
        return;
      }
      const logger = options.quiet ? false : { level: 'info', stream: await logDestination(format) };
      const server = await runUntilSignal({
        start: () =>
          startServer({
            home,
            listen,
            env,
            tls: { ...(options.tlsCert === undefined ? {} : { cert: options.tlsCert }), ...(options.tlsKey === undefined ? {} : { key: options.tlsKey }) },
            logger,
            ...(options.environment === undefined ? {} : { environment: options.environment }),
            signIn: signInFlags(options),
            network: networkFlags(options),
            ...(options.metricsListen === undefined ? {} : { metricsListen: options.metricsListen }),
          }).catch((error: unknown) => {
            throw error instanceof ListenError ? listenError(error) : error;
          }),
        stop: (running) => running.close(),
        timeoutMs: CLOSE_TIMEOUT_MS,
        startGraceMs: START_GRACE_MS,
        stopping: 'closing (finishing requests in flight)',
        log: (level, message) => say(level, message),
      });
      if (server === undefined) return;
      // Tests and scripts read this to learn the port chosen for --listen HOST:0: the line
      // `listening on URL`, or with JSON logs the record of that msg (its `url` field holds the URL).
      if (format === 'pretty') {
        process.stderr.write(`strata: serving ${home}\nlistening on ${server.url}\n${server.metricsUrl === null ? '' : `metrics on ${server.metricsUrl}\n`}`);
      } else {
        // "listening on" last: a reader that waits for it finds the others already written.
        say('info', `serving ${home}`, { home });
        if (server.metricsUrl !== null) say('info', `metrics on ${server.metricsUrl}`, { metricsUrl: server.metricsUrl });
        say('info', `listening on ${server.url}`, { url: server.url });
      }
      if (ctx.output.json) ctx.output.result({ url: server.url, home }, () => {});
    });
}

interface ServeOptions {
  home?: string;
  listen: string;
  environment?: string;
  quiet?: boolean;
  logFormat?: string;
  oidcIssuer?: string;
  oidcAudience?: string;
  oidcClientId?: string;
  oidcScopes?: string;
  oidcTokenType?: string;
  rateLimit?: string;
  authFailureLimit?: string;
  redis?: string;
  trustedProxies?: string;
  metricsListen?: string;
  tlsCert?: string;
  tlsKey?: string;
  config?: string;
  migrateOnly?: boolean;
  database?: string;
  objects?: string;
}

/** --database / --objects win over the environment and the config file, like every flag. */
export function withStorageFlags(env: NodeJS.ProcessEnv, flags: { database?: string; objects?: string }): NodeJS.ProcessEnv {
  const merged = { ...env };
  if (flags.database !== undefined) merged['STRATA_DATABASE_URL'] = flags.database;
  if (flags.objects !== undefined) merged['STRATA_OBJECTS_URL'] = flags.objects;
  return merged;
}

function networkFlags(options: ServeOptions): NetworkFlags {
  const flags: NetworkFlags = {};
  for (const key of ['rateLimit', 'authFailureLimit', 'redis', 'trustedProxies'] as const) {
    const value = options[key];
    if (value !== undefined) flags[key] = value;
  }
  return flags;
}

function signInFlags(options: ServeOptions): SignInFlags {
  const flags: SignInFlags = {};
  for (const key of ['oidcIssuer', 'oidcAudience', 'oidcClientId', 'oidcScopes', 'oidcTokenType'] as const) {
    const value = options[key];
    if (value !== undefined) flags[key] = value;
  }
  return flags;
}

/**
 * "address in use" is the common first-run problem (a second `strata serve`); say so plainly, and
 * name the address that failed: the API's (--listen) or the metrics' (--metrics-listen).
 */
function listenError(error: { code: string | undefined; field: 'listen' | 'metricsListen'; address: string }): unknown {
  const { code, field, address } = error;
  if (code === 'EADDRINUSE' || code === 'EACCES' || code === 'EADDRNOTAVAIL') {
    const why = code === 'EADDRINUSE' ? 'the address is in use (another strata serve?)' : code === 'EACCES' ? 'permission denied' : 'no such local address';
    const flag = field === 'listen' ? '--listen' : '--metrics-listen';
    return new CliError('LISTEN_FAILED', `cannot listen on ${address} (${flag}): ${why}`, { exitCode: EXIT.unexpected, details: { [field]: address, cause: code }, cause: error });
  }
  return error;
}

/** A password in a postgres:// URL: its userinfo, or libpq's `?password=`. */
function hasPassword(databaseUrl: string): boolean {
  try {
    const url = new URL(databaseUrl);
    return url.password !== '' || [...url.searchParams.keys()].some((key) => key.toLowerCase() === 'password');
  } catch {
    return false; // not a URL: the storage layer refuses it, without quoting it
  }
}

type ServeLog = (level: 'info' | 'warn' | 'error', message: string, fields?: Record<string, unknown>) => void;

/**
 * What `strata serve` says about itself (warnings, serving, signals): plain `strata: ...` lines with
 * the pretty format; with JSON logs, JSON records like the request log's, so that whatever reads
 * that stream (a shipper, the journal) gets JSON only. Not quieted by --quiet, which is about requests.
 */
async function serveLog(format: LogFormat, output: Output): Promise<ServeLog & ForegroundLog> {
  if (format === 'pretty') {
    return (level, message) => (level === 'warn' ? output.warn(message) : void process.stderr.write(`strata: ${message}\n`));
  }
  const { default: pino } = await import('pino');
  const logger = pino({ level: 'info' }, await logDestination('json'));
  return (level, message, fields = {}) => logger[level](fields, message);
}
