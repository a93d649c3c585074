import { readFileSync } from 'node:fs';

// Read once from package.json (dist/cli/version.js → ../../package.json) so the CLI, the User-Agent
// and `strata --version` never disagree with the package.
function readVersion(): string {
  try {
    const text = readFileSync(new URL('../../package.json', import.meta.url), 'utf8');
    const version = (JSON.parse(text) as { version?: unknown }).version;
    return typeof version === 'string' ? version : '0.0.0';
  } catch {
    // A relocated dist/ without package.json still runs; the version is informational only.
    return '0.0.0';
  }
}

export const CLI_VERSION: string = readVersion();
