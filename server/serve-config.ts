// `strata serve --config FILE`: every setting of the server in one JSON file, for a platform team's
// configuration management. The file fills in what neither a flag nor the environment gives (flags >
// environment > file > defaults; a secret's `_FILE` form counts as its source's); an unknown key is an error naming it (a typo must not silently fall
// back to a default). Secrets come from files, never from the command line: `pepperFile`,
// `redisUrlFile` in the config, or `STRATA_PEPPER_FILE`, `STRATA_REDIS_URL_FILE` in the environment
// (container secrets); their values appear in no log line and no error.
//
// {
//   "home": "/var/lib/strata", "listen": "0.0.0.0:7420", "environment": "prod",
//   "oidcIssuer": "https://id.example.org", "oidcAudience": "https://strata.example.org", "oidcClientId": "strata-cli",
//   "rateLimit": "1000/10s", "authFailureLimit": "20/60s", "redisUrlFile": "/run/secrets/redis-url",
//   "trustedProxies": ["10.0.0.0/8"], "metricsListen": "127.0.0.1:9464",
//   "tlsCert": "/etc/strata/tls.crt", "tlsKey": "/etc/strata/tls.key", "pepperFile": "/run/secrets/strata-pepper",
//   "databaseUrlFile": "/run/secrets/strata-database-url", "objectsUrl": "s3://strata-objects?region=eu-west-1",
//   "s3AccessKeyIdFile": "/run/secrets/s3-key-id", "s3SecretAccessKeyFile": "/run/secrets/s3-secret",
//   "smallObjectMaxBytes": 65536
// }

import { readFileSync } from 'node:fs';
import { StrataError } from '../engine/errors.js';

/** Config key → the environment variable it stands in for. */
const KEYS = {
  home: 'STRATA_HOME',
  listen: 'STRATA_LISTEN',
  environment: 'STRATA_ENV',
  oidcIssuer: 'STRATA_OIDC_ISSUER',
  oidcAudience: 'STRATA_OIDC_AUDIENCE',
  oidcClientId: 'STRATA_OIDC_CLIENT_ID',
  oidcScopes: 'STRATA_OIDC_SCOPES',
  oidcTokenType: 'STRATA_OIDC_TOKEN_TYPE',
  rateLimit: 'STRATA_RATE_LIMIT',
  authFailureLimit: 'STRATA_AUTH_FAILURE_LIMIT',
  redisUrl: 'STRATA_REDIS_URL',
  redisUrlFile: 'STRATA_REDIS_URL_FILE',
  trustedProxies: 'STRATA_TRUSTED_PROXIES',
  metricsListen: 'STRATA_METRICS_LISTEN',
  tlsCert: 'STRATA_TLS_CERT',
  tlsKey: 'STRATA_TLS_KEY',
  pepperFile: 'STRATA_PEPPER_FILE',
  databaseUrl: 'STRATA_DATABASE_URL',
  databaseUrlFile: 'STRATA_DATABASE_URL_FILE',
  objectsUrl: 'STRATA_OBJECTS_URL',
  smallObjectMaxBytes: 'STRATA_SMALL_OBJECT_MAX_BYTES',
  s3AccessKeyIdFile: 'AWS_ACCESS_KEY_ID_FILE',
  s3SecretAccessKeyFile: 'AWS_SECRET_ACCESS_KEY_FILE',
} as const;

/** Secrets whose value is in a file named by `<NAME>_FILE`. */
const SECRET_FILES = {
  STRATA_PEPPER_FILE: 'STRATA_PEPPER',
  STRATA_REDIS_URL_FILE: 'STRATA_REDIS_URL',
  // a database URL carries its password
  STRATA_DATABASE_URL_FILE: 'STRATA_DATABASE_URL',
  AWS_ACCESS_KEY_ID_FILE: 'AWS_ACCESS_KEY_ID',
  AWS_SECRET_ACCESS_KEY_FILE: 'AWS_SECRET_ACCESS_KEY',
} as const;

function invalid(field: string, message: string): StrataError {
  return new StrataError('INVALID_ARGUMENT', { message, details: { field } });
}

function readSecret(path: string, variable: string): string {
  try {
    return readFileSync(path, 'utf8').trim();
  } catch (error) {
    // The path is configuration, not a secret; the file's content never appears.
    throw invalid(variable, `cannot read ${variable} ${path} (${(error as NodeJS.ErrnoException).code ?? 'error'})`);
  }
}

/**
 * The environment the server reads its settings from: the real one, over the config file's values,
 * with `*_FILE` secrets read in.
 */
export function serveEnvironment(configPath: string | undefined, env: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  const fromFile: NodeJS.ProcessEnv = {};
  if (configPath !== undefined) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(readFileSync(configPath, 'utf8'));
    } catch (error) {
      const why = error instanceof SyntaxError ? 'is not valid JSON' : `cannot be read (${(error as NodeJS.ErrnoException).code ?? 'error'})`;
      throw invalid('config', `the config file ${configPath} ${why}`);
    }
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) throw invalid('config', `the config file ${configPath} must hold a JSON object`);
    for (const [key, value] of Object.entries(parsed)) {
      const variable = KEYS[key as keyof typeof KEYS];
      if (variable === undefined) throw invalid(key, `unknown setting '${key}' in ${configPath} (known: ${Object.keys(KEYS).join(', ')})`);
      if (key === 'trustedProxies' && Array.isArray(value) && value.every((item) => typeof item === 'string')) {
        fromFile[variable] = value.join(',');
      } else if (typeof value === 'string') {
        fromFile[variable] = value;
      } else if (typeof value === 'number' && Number.isFinite(value)) {
        fromFile[variable] = String(value);
      } else {
        throw invalid(key, `'${key}' in ${configPath} must be a string`);
      }
    }
  }
  const merged: NodeJS.ProcessEnv = { ...fromFile, ...env };
  // A secret and its `_FILE` form are one setting: the environment's (either form) wins over the
  // config file's (either form), as for every other setting. Merging the two forms separately let
  // a config's `databaseUrl` beat the environment's STRATA_DATABASE_URL_FILE. Within one source the
  // plain value wins over its file; a file is read only when its source is the one that applies.
  for (const [fileVariable, variable] of Object.entries(SECRET_FILES)) {
    const value = secretFrom(env, variable, fileVariable) ?? secretFrom(fromFile, variable, fileVariable);
    if (value !== undefined) merged[variable] = value;
  }
  return merged;
}

function secretFrom(source: NodeJS.ProcessEnv, variable: string, fileVariable: string): string | undefined {
  const value = source[variable];
  if (value !== undefined && value !== '') return value;
  const path = source[fileVariable];
  return path === undefined || path === '' ? undefined : readSecret(path, fileVariable);
}
