// The OpenAPI document is generated from the same route schemas the server validates with: an
// onRoute hook collects every route as it is registered, and the document is assembled once.

import type { RouteOptions } from 'fastify';
import type { TSchema } from 'typebox';
import { ErrorSchema } from './resource-schemas.js';

export interface RouteDoc {
  summary: string;
  tags: string[];
  /** success status (default 200) */
  status?: number;
  /** success body; omitted for 204 or non-JSON bodies */
  response?: TSchema;
  /** request body media type when it is not JSON (raw uploads) */
  consumes?: string;
  /** response media type when it is not JSON (file bytes) */
  produces?: string;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    doc?: RouteDoc;
  }
}

interface CollectedRoute {
  method: string;
  url: string;
  schema: { params?: unknown; querystring?: unknown; body?: unknown };
  doc: RouteDoc | undefined;
  public: boolean;
}

type JsonObject = Record<string, unknown>;

function plain(schema: unknown): JsonObject {
  return JSON.parse(JSON.stringify(schema)) as JsonObject;
}

function propertiesOf(schema: unknown): Array<[string, unknown, boolean]> {
  if (schema === undefined) return [];
  const s = plain(schema);
  const required = new Set((s['required'] as string[] | undefined) ?? []);
  return Object.entries((s['properties'] as JsonObject | undefined) ?? {}).map(([name, value]) => [name, value, required.has(name)]);
}

export function createOpenApiCollector() {
  const routes: CollectedRoute[] = [];
  return {
    onRoute(options: RouteOptions): void {
      const methods = Array.isArray(options.method) ? options.method : [options.method];
      for (const method of methods) {
        if (method === 'HEAD') continue;
        const config = (options.config ?? {}) as { doc?: RouteDoc; public?: boolean };
        routes.push({
          method: method.toLowerCase(),
          url: options.url,
          schema: (options.schema ?? {}) as CollectedRoute['schema'],
          doc: config.doc,
          public: config.public === true,
        });
      }
    },
    document(info: { title: string; version: string }): JsonObject {
      const paths: Record<string, Record<string, JsonObject>> = {};
      for (const route of routes) {
        const path = route.url.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
        const parameters = [
          ...propertiesOf(route.schema.params).map(([name, schema]) => ({ name, in: 'path', required: true, schema })),
          ...propertiesOf(route.schema.querystring).map(([name, schema, required]) => ({ name, in: 'query', required, schema })),
        ];
        const doc = route.doc;
        const status = String(doc?.status ?? 200);
        const success: JsonObject = { description: doc?.summary ?? 'OK' };
        if (doc?.produces !== undefined) success['content'] = { [doc.produces]: { schema: { type: 'string', format: 'binary' } } };
        else if (doc?.response !== undefined) success['content'] = { 'application/json': { schema: plain(doc.response) } };
        const operation: JsonObject = {
          summary: doc?.summary,
          tags: doc?.tags,
          parameters,
          responses: {
            [status]: success,
            default: { description: 'Error', content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } },
          },
        };
        if (route.public) operation['security'] = [];
        if (doc?.consumes !== undefined) {
          operation['requestBody'] = { required: true, content: { [doc.consumes]: { schema: { type: 'string', format: 'binary' } } } };
        } else if (route.schema.body !== undefined) {
          operation['requestBody'] = { content: { 'application/json': { schema: plain(route.schema.body) } } };
        }
        paths[path] ??= {};
        paths[path][route.method] = operation;
      }
      return {
        openapi: '3.1.0',
        info,
        servers: [{ url: '/' }],
        security: [{ bearer: [] }],
        paths,
        components: {
          schemas: { Error: plain(ErrorSchema) },
          securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: 'API key rk.<environment>.<keyId>.<secret>' } },
        },
      };
    },
  };
}
