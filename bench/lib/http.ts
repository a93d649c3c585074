// A keep-alive HTTP client on node:http (no extra dependency), for the HTTP variants.
import { createReadStream, statSync } from 'node:fs';
import { Agent, request } from 'node:http';

export interface HttpResponse {
  status: number;
  body: Buffer;
}

export class HttpClient {
  private readonly agent: Agent;
  private readonly base: URL;

  constructor(
    url: string,
    private readonly apiKey: string,
    maxSockets: number,
  ) {
    this.base = new URL(url);
    this.agent = new Agent({ keepAlive: true, maxSockets, maxFreeSockets: maxSockets });
  }

  /** One request; the body is bytes, a JSON value, or `{ file }` streamed from disk. */
  send(method: string, path: string, body?: Uint8Array | { file: string } | object): Promise<HttpResponse> {
    const headers: Record<string, string | number> = { authorization: `Bearer ${this.apiKey}` };
    let payload: Uint8Array | undefined;
    let file: string | undefined;
    if (body instanceof Uint8Array) {
      payload = body;
      headers['content-type'] = 'application/octet-stream';
    } else if (body !== undefined && 'file' in body && typeof body.file === 'string') {
      file = body.file;
      headers['content-type'] = 'application/octet-stream';
      headers['content-length'] = statSync(file).size;
    } else if (body !== undefined) {
      payload = Buffer.from(JSON.stringify(body));
      headers['content-type'] = 'application/json';
    }
    if (payload !== undefined) headers['content-length'] = payload.length;
    return new Promise((resolve, reject) => {
      const req = request({ host: this.base.hostname, port: this.base.port, method, path, headers, agent: this.agent }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks) }));
        res.on('error', reject);
      });
      req.on('error', reject);
      if (file !== undefined) {
        const stream = createReadStream(file, { highWaterMark: 1024 * 1024 });
        stream.on('error', (error) => req.destroy(error));
        stream.pipe(req);
      } else {
        req.end(payload);
      }
    });
  }

  /** A request that must succeed (2xx); its JSON body. */
  async json<T>(method: string, path: string, body?: Uint8Array | { file: string } | object): Promise<T> {
    const response = await this.send(method, path, body);
    if (response.status < 200 || response.status > 299) {
      throw new Error(`${method} ${path}: HTTP ${response.status} ${response.body.toString('utf8').slice(0, 500)}`);
    }
    return JSON.parse(response.body.toString('utf8')) as T;
  }

  close(): void {
    this.agent.destroy();
  }
}

export function writePath(projectId: string, path: string): string {
  return `/v1/projects/${projectId}/fs/write?path=${encodeURIComponent(path)}`;
}
