// Plays the person at the browser for a CLI command that signs in (`strata login`, `strata sso
// test`): runs it, waits for the URL it prints, and (withBrowser) follows that URL through the
// provider's scripted sign-in to the command's loopback listener.

import { spawn } from 'node:child_process';
import { MAIN } from '../cli-harness.js';
import { browseToRedirect } from './oidc-provider.js';

export interface RunningSignIn {
  /** the authorization (or device verification) URL the command printed */
  url: string;
  /** what the command printed on stderr so far */
  stderr(): string;
  done: Promise<{ code: number | null; stdout: string; stderr: string }>;
}

/** Starts the command and resolves once it printed its URL (a line of two spaces and the URL). */
export async function startSignIn(args: string[], env: NodeJS.ProcessEnv): Promise<RunningSignIn> {
  const child = spawn(process.execPath, [MAIN, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  const done = new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr })));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no URL from strata ${args[0]}:\n${stderr}`)), 20_000);
    child.stderr!.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
      const match = /^ {2}(http\S+)$/m.exec(stderr);
      if (match) {
        clearTimeout(timer);
        resolve(match[1]!);
      }
    });
    child.once('close', () => reject(new Error(`strata ${args[0]} exited early:\n${stderr}`)));
  });
  return { url, stderr: () => stderr, done };
}

export async function withBrowser(args: string[], env: NodeJS.ProcessEnv, issuer: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const running = await startSignIn(args, env);
  const callback = await browseToRedirect(running.url, issuer);
  const page = await fetch(callback);
  if (page.status !== 200) throw new Error(`the command's redirect listener answered ${page.status}`);
  return running.done;
}
