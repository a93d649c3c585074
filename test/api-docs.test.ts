// docs/api.md and GET /openapi.json cannot drift: every route the app serves (the server's app, and the
// daemon's, which adds /v1/daemon/*) is a row of a table in docs/api.md, and every route a table there
// lists is served. A table row is `| METHOD [METHOD…] | `/path` [· `/path`…] | …`; paths use the
// OpenAPI spelling (`{projectId}`).

import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningDaemon, startDaemon } from '../daemon/daemon.js';
import { type Harness, openHarness } from './control-api-harness.js';

const DOC = new URL('../docs/api.md', import.meta.url);
const METHODS = new Set(['GET', 'POST', 'PUT', 'PATCH', 'DELETE']);

interface OpenApi {
  paths: Record<string, Record<string, unknown>>;
}

function routesOf(doc: OpenApi): string[] {
  return Object.entries(doc.paths).flatMap(([path, operations]) => Object.keys(operations).map((method) => `${method.toUpperCase()} ${path}`));
}

/** Cells of a Markdown table row, split at pipes that are not escaped (`cli\|desktop`). */
function cells(line: string): string[] {
  return line
    .trim()
    .replace(/^\||\|$/g, '')
    .split(/(?<!\\)\|/)
    .map((cell) => cell.trim());
}

/** Each listed route with the heading of the section that lists it. */
function documentedRoutes(markdown: string): Map<string, string> {
  const routes = new Map<string, string>();
  let heading = '';
  for (const line of markdown.split('\n')) {
    if (line.startsWith('#')) heading = line.replace(/^#+\s*/, '');
    if (!line.startsWith('|')) continue;
    const [methodCell, pathCell] = cells(line);
    if (methodCell === undefined || pathCell === undefined) continue;
    const methods = methodCell.split(/\s+/);
    if (!methods.every((method) => METHODS.has(method))) continue;
    const paths = [...pathCell.matchAll(/`(\/[^`]*)`/g)].map((match) => match[1]!);
    for (const method of methods) for (const path of paths) routes.set(`${method} ${path}`, heading);
  }
  return routes;
}

describe('docs/api.md and /openapi.json', () => {
  let h: Harness;
  let home: string;
  let daemon: RunningDaemon;
  let server: string[];
  let daemonRoutes: string[];
  let documented: Map<string, string>;

  beforeAll(async () => {
    // The app as `strata serve` builds it (with its readiness route) …
    h = await openHarness({ readyz: true });
    const doc = await h.ok<OpenApi>('GET', '/openapi.json', { key: null as never });
    server = routesOf(doc);
    // … and a real daemon on an empty home: the same app plus its own routes.
    home = await mkdtemp(join(tmpdir(), 'strata-api-docs-'));
    daemon = await startDaemon({ home, listen: '127.0.0.1:0', logger: pino({ level: 'silent' }) });
    const response = await fetch(`${daemon.url}/openapi.json`);
    expect(response.status).toBe(200);
    daemonRoutes = routesOf((await response.json()) as OpenApi);
    documented = documentedRoutes(await readFile(DOC, 'utf8'));
  });
  afterAll(async () => {
    await daemon?.stop();
    await h?.dispose();
    if (home !== undefined) await rm(home, { recursive: true, force: true });
  });

  it('reads the tables: methods × paths, escaped pipes and several paths per row', () => {
    const sample = documentedRoutes(
      [
        '## Things',
        '| Method | Path | Body | Returns |',
        '|---|---|---|---|',
        '| GET POST | `/a/{id}` · `/b` | `{kind: x\\|y}` | `/not/a/path` is in the third cell |',
        '| Prose | `/ignored` | | |',
      ].join('\n'),
    );
    expect([...sample.keys()].sort()).toStrictEqual(['GET /a/{id}', 'GET /b', 'POST /a/{id}', 'POST /b']);
    expect(sample.get('GET /b')).toBe('Things');
  });

  it('documents every route /openapi.json lists, on the server and on the daemon', () => {
    expect(server.length).toBeGreaterThan(50);
    const served = [...new Set([...server, ...daemonRoutes])];
    expect(served.filter((route) => !documented.has(route))).toStrictEqual([]);
  });

  it('lists no route that is not served', () => {
    const served = new Set([...server, ...daemonRoutes]);
    expect([...documented.keys()].filter((route) => !served.has(route))).toStrictEqual([]);
  });

  it('documents the routes only the daemon serves in its own section, and the daemon serves all the rest', () => {
    const daemonOnly = daemonRoutes.filter((route) => !server.includes(route));
    expect(daemonOnly.length).toBeGreaterThan(0);
    expect(daemonOnly.filter((route) => !documented.get(route)?.startsWith('The daemon'))).toStrictEqual([]);
    // The daemon serves the server's API for its home; only readiness (storage checks of a server) is not.
    expect(server.filter((route) => !daemonRoutes.includes(route))).toStrictEqual(['GET /readyz']);
  });
});
