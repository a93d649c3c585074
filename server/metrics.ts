// Prometheus metrics of `strata serve` (prom-client), on a listen address of their own
// (`--metrics-listen`, STRATA_METRICS_LISTEN) so that the API's port never exposes them:
//
//   strata_http_requests_total{method,route,status}            requests answered
//   strata_http_request_duration_seconds{method,route,status}  their latency (histogram)
//   strata_versions_written_total, strata_version_bytes_written_total
//   strata_gc_runs_total, strata_gc_objects_deleted_total, strata_gc_bytes_freed_total
//   and prom-client's process metrics (CPU, memory, event loop lag, GC pauses).
//
// Routes are labelled by their pattern (`/v1/projects/:projectId/fs/write`), never by a concrete URL.

import { createServer, type Server } from 'node:http';
import { Counter, collectDefaultMetrics, Histogram, Registry } from 'prom-client';
import type { Engine } from '../engine/engine-api.js';
import type { MetadataRepository } from '../engine/ports/metadata-repository.js';

export interface ServerMetrics {
  registry: Registry;
  /** one answered request */
  observe(sample: { method: string; route: string; status: number; seconds: number }): void;
  /** the repository, counting the versions it commits */
  countVersions(repository: MetadataRepository): MetadataRepository;
  /** the engine, counting what gc does */
  countGc(engine: Engine): Engine;
}

export function createServerMetrics(): ServerMetrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'strata_' });
  const labelNames = ['method', 'route', 'status'] as const;
  const requests = new Counter({ name: 'strata_http_requests_total', help: 'HTTP requests answered', labelNames, registers: [registry] });
  const duration = new Histogram({
    name: 'strata_http_request_duration_seconds',
    help: 'HTTP request latency',
    labelNames,
    buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [registry],
  });
  const versions = new Counter({ name: 'strata_versions_written_total', help: 'version records committed', registers: [registry] });
  const versionBytes = new Counter({ name: 'strata_version_bytes_written_total', help: 'sizes of the committed versions', registers: [registry] });
  const gcRuns = new Counter({ name: 'strata_gc_runs_total', help: 'garbage collections run', registers: [registry] });
  const gcObjects = new Counter({ name: 'strata_gc_objects_deleted_total', help: 'objects garbage collection deleted', registers: [registry] });
  const gcBytes = new Counter({ name: 'strata_gc_bytes_freed_total', help: 'bytes garbage collection freed', registers: [registry] });

  return {
    registry,
    observe({ method, route, status, seconds }) {
      const labels = { method, route, status: String(status) };
      requests.inc(labels);
      duration.observe(labels, seconds);
    },
    countVersions(repository) {
      const inner = repository.versions;
      const commit: typeof inner.commit = async (commits, options) => {
        // Results follow the commits, then any latecomers the repository took in.
        const committed = [...commits];
        const latecomers = options?.latecomers;
        const counted =
          latecomers === undefined
            ? options
            : {
                ...options,
                latecomers: (projects: ReadonlySet<string>) => {
                  const late = latecomers(projects);
                  committed.push(...late);
                  return late;
                },
              };
        const results = await inner.commit(commits, counted);
        results.forEach((result, index) => {
          if (!result.ok) return;
          versions.inc();
          versionBytes.inc(committed[index]!.record.size ?? 0);
        });
        return results;
      };
      const counted = override(inner, { commit });
      return override(repository, { versions: counted });
    },
    countGc(engine) {
      const gc: Engine['gc'] = async (...args) => {
        const result = await engine.gc(...args);
        gcRuns.inc();
        gcObjects.inc(result.objectsDeleted);
        gcBytes.inc(result.bytesFreed);
        return result;
      };
      return override(engine, { gc });
    },
  };
}

/** `target` with some members replaced; its other methods still run with `this` = target (private fields). */
function override<T extends object>(target: T, replaced: Partial<Record<keyof T, unknown>>): T {
  return new Proxy(target, {
    get(object, name) {
      if (Object.hasOwn(replaced, name)) return replaced[name as keyof T];
      const value = Reflect.get(object, name, object) as unknown;
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(object) : value;
    },
  });
}

/** Serves `GET /metrics` (and nothing else) on its own address. */
export async function serveMetrics(metrics: ServerMetrics, host: string, port: number): Promise<{ url: string; close(): Promise<void> }> {
  const server: Server = createServer((request, response) => {
    if (request.method !== 'GET' || request.url?.split('?')[0] !== '/metrics') {
      response.writeHead(404, { 'content-type': 'text/plain' }).end('only /metrics here\n');
      return;
    }
    metrics.registry.metrics().then(
      (text) => response.writeHead(200, { 'content-type': metrics.registry.contentType }).end(text),
      () => response.writeHead(500).end(),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, resolve);
  });
  const address = server.address() as { port: number };
  return {
    url: `http://${host.includes(':') ? `[${host}]` : host}:${address.port}/metrics`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
