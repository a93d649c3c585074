// A real S3 server for tests and benchmarks: s3rver (an S3 implementation on the local filesystem,
// speaking the S3 REST protocol over HTTP) in a child process on 127.0.0.1, on a free port, in a temp
// directory, with one bucket and a random key pair. A child process, not in-process: the store under
// test must see a separate server, and s3rver's own work (it MD5s and copies every byte on its event
// loop) must not be charged to the test's event loop.
//
// s3rver 3.7.1 lacks two S3 calls the store uses, AbortMultipartUpload and ListMultipartUploads (and
// its paged listings need single DES, patched below); the
// child adds both (front middleware working on s3rver's own upload directories, without signature
// checks: test use only), so tests can check that a failed upload leaves no pending multipart upload.
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface S3Server {
  endpoint: string;
  bucket: string;
  accessKeyId: string;
  secretAccessKey: string;
  region: string;
  /** the s3:// URL of the bucket (credentials not included: they come from the environment) */
  url: string;
  close(): Promise<void>;
}

export type TestS3Server = S3Server;

const CHILD_SOURCE = `
'use strict';
const fs = require('node:fs');
const path = require('node:path');
// s3rver makes ListObjectsV2 continuation tokens with single DES, which OpenSSL 3 keeps in its legacy
// provider: every truncated listing (more keys than MaxKeys) failed with InternalError. Triple DES with
// the key repeated is single DES, and is in the default provider.
const crypto = require('node:crypto');
for (const name of ['createCipheriv', 'createDecipheriv']) {
  const original = crypto[name];
  crypto[name] = (algorithm, key, iv, options) =>
    algorithm === 'des' ? original('des-ede3-cbc', Buffer.concat([key, key, key]), iv, options) : original(algorithm, key, iv, options);
}
const main = process.env.S3RVER_MAIN;
const S3rver = require(main);
const { DUMMY_ACCOUNT } = require(path.join(path.dirname(main), 'models', 'account.js'));
const directory = process.env.S3_DIR;
const escape = (s) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
const uploadsOf = (bucket) => path.join(directory, bucket, '._S3rver_uploads');

async function extraApis(ctx, next) {
  const match = /^\\/([^/]+)\\/?(.*)$/.exec(ctx.path);
  if (match !== null && ctx.method === 'DELETE' && match[2] !== '' && 'uploadId' in ctx.query) {
    const dir = path.join(uploadsOf(match[1]), path.basename(String(ctx.query.uploadId)));
    if (!fs.existsSync(dir)) {
      ctx.status = 404;
      ctx.type = 'application/xml';
      ctx.body = '<?xml version="1.0" encoding="UTF-8"?><Error><Code>NoSuchUpload</Code><Message>The specified upload does not exist.</Message></Error>';
      return;
    }
    fs.rmSync(dir, { recursive: true, force: true });
    ctx.status = 204;
    return;
  }
  if (match !== null && ctx.method === 'GET' && match[2] === '' && 'uploads' in ctx.query) {
    const prefix = String(ctx.query.prefix || '');
    let ids = [];
    try {
      ids = fs.readdirSync(uploadsOf(match[1]));
    } catch {}
    const uploads = [];
    for (const id of ids) {
      const dir = path.join(uploadsOf(match[1]), id);
      let key;
      try {
        key = fs.readFileSync(path.join(dir, 'key'), 'utf8');
      } catch {
        continue; // completed or aborted meanwhile
      }
      if (!key.startsWith(prefix)) continue;
      const initiated = fs.statSync(dir).mtime.toISOString();
      uploads.push('<Upload><Key>' + escape(key) + '</Key><UploadId>' + id + '</UploadId><Initiated>' + initiated + '</Initiated></Upload>');
    }
    ctx.type = 'application/xml';
    ctx.body = '<?xml version="1.0" encoding="UTF-8"?><ListMultipartUploadsResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Bucket>' +
      match[1] + '</Bucket><IsTruncated>false</IsTruncated>' + uploads.join('') + '</ListMultipartUploadsResult>';
    return;
  }
  await next();
}

DUMMY_ACCOUNT.createKeyPair(process.env.S3_KEY_ID, process.env.S3_SECRET);
const server = new S3rver({ address: '127.0.0.1', port: 0, directory, silent: true, configureBuckets: [{ name: process.env.S3_BUCKET }] });
server.middleware.unshift(extraApis); // composed when run() listens
server.run().then(
  (address) => process.stdout.write(JSON.stringify({ port: address.port }) + '\\n'),
  (error) => {
    process.stderr.write(String(error && error.stack || error) + '\\n');
    process.exit(1);
  },
);
// The parent closing our stdin (or dying) ends us.
process.stdin.on('end', () => process.exit(0));
process.stdin.resume();
`;

export async function startS3Server(options: { bucket?: string } = {}): Promise<S3Server> {
  const directory = await mkdtemp(join(tmpdir(), 'strata-s3rver-'));
  const bucket = options.bucket ?? 'strata-test';
  const accessKeyId = `AKID${randomBytes(8).toString('hex').toUpperCase()}`;
  const secretAccessKey = randomBytes(24).toString('base64url');
  const child: ChildProcess = spawn(process.execPath, ['-e', CHILD_SOURCE], {
    env: {
      ...process.env,
      S3RVER_MAIN: createRequire(import.meta.url).resolve('s3rver'),
      S3_DIR: directory,
      S3_BUCKET: bucket,
      S3_KEY_ID: accessKeyId,
      S3_SECRET: secretAccessKey,
    },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const exited = once(child, 'exit');
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  let port: number;
  try {
    port = await new Promise<number>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`s3rver did not start in 30 s:\n${stderr}`)), 30_000);
      let stdout = '';
      child.stdout!.on('data', (chunk: Buffer) => {
        stdout += chunk.toString();
        const line = stdout.split('\n')[0];
        if (stdout.includes('\n') && line !== undefined) {
          clearTimeout(timer);
          resolve((JSON.parse(line) as { port: number }).port);
        }
      });
      child.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`s3rver exited with ${code}:\n${stderr}`));
      });
    });
  } catch (error) {
    child.kill('SIGKILL');
    await rm(directory, { recursive: true, force: true });
    throw error;
  }
  const endpoint = `http://127.0.0.1:${port}`;
  const region = 'us-east-1';
  return {
    endpoint,
    bucket,
    accessKeyId,
    secretAccessKey,
    region,
    url: `s3://${bucket}?endpoint=${encodeURIComponent(endpoint)}&region=${region}&forcePathStyle=true`,
    async close() {
      if (child.exitCode === null && child.signalCode === null) {
        child.stdin!.end();
        const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
        await exited;
        clearTimeout(timer);
      }
      await rm(directory, { recursive: true, force: true });
    },
  };
}
