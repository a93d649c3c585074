// Ignore rules of a mounted project: the shared defaults plus `.strataignore` — read from the engine,
// not from the mount point. The process serving the mount must never read its own mount
// synchronously (the kernel would wait for the event loop that is blocked reading).
import ignore, { type Ignore } from 'ignore';
import type { Engine } from '../../engine/engine-api.js';
import { BoundedIgnore, DEFAULT_IGNORES, STRATAIGNORE } from '../capture/ignore.js';

const MAX_RULES_BYTES = 1024 * 1024;

export class MountIgnore {
  private matcher = BoundedIgnore.of(DEFAULT_IGNORES);
  /** the last problem reading `.strataignore`, for status */
  problem: string | null = null;

  constructor(
    private readonly engine: Engine,
    private readonly projectId: string,
  ) {}

  ignores(path: string, dir = false): boolean {
    if (path === '') return false;
    if (path === '.strata' || path.startsWith('.strata/')) return true;
    return this.matcher.ignores(dir ? `${path}/` : path);
  }

  async reload(): Promise<void> {
    const next: Ignore = ignore().add([...DEFAULT_IGNORES]);
    this.problem = null;
    try {
      const entry = await this.engine.stat({ projectId: this.projectId, path: STRATAIGNORE });
      if (entry !== null && entry.size <= MAX_RULES_BYTES) {
        const { stream } = await this.engine.readFile({ projectId: this.projectId, path: STRATAIGNORE });
        const parts: Buffer[] = [];
        for await (const chunk of stream as AsyncIterable<Buffer>) parts.push(chunk);
        next.add(Buffer.concat(parts).toString('utf8'));
      } else if (entry !== null) {
        this.problem = `${STRATAIGNORE} is larger than ${MAX_RULES_BYTES} bytes; only the default rules apply`;
      }
    } catch (error) {
      this.problem = `cannot read ${STRATAIGNORE}: ${(error as Error).message}`;
    }
    this.matcher = new BoundedIgnore(next);
  }
}

export { STRATAIGNORE };
