// Plays the person at the browser for a CLI command that signs in (`strata login`, `strata sso
// test`): runs it, waits for the authorization URL it prints, follows it through the provider's
// scripted sign-in and delivers the redirect to the command's loopback listener.

import { spawn } from 'node:child_process';
import { MAIN } from '../cli-harness.js';
import { browseToRedirect } from './oidc-provider.js';

export async function withBrowser(args: string[], env: NodeJS.ProcessEnv, issuer: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [MAIN, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  const done = new Promise<number | null>((resolve) => child.on('close', resolve));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no URL:\n${stderr}`)), 20_000);
    child.stderr!.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
      const match = /^ {2}(http\S+)$/m.exec(stderr);
      if (match) {
        clearTimeout(timer);
        resolve(match[1]!);
      }
    });
    child.once('close', () => reject(new Error(`exited early:\n${stderr}`)));
  });
  const callback = await browseToRedirect(url, issuer);
  const page = await fetch(callback);
  if (page.status !== 200) throw new Error(`the command's redirect listener answered ${page.status}`);
  return { code: await done, stdout, stderr };
}
