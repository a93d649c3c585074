import type { Command } from 'commander';
import { contextFor } from '../context.js';
import { CliError, EXIT, usageError } from '../errors.js';

export const DEFAULT_LISTEN = '127.0.0.1:7420';
/** A close that hangs (a client holding a stream open) must not keep a stopped service alive. */
const CLOSE_TIMEOUT_MS = 10_000;

const LISTEN = /^(\[[0-9a-fA-F:.]+\]|[^:\s[\]]+):(\d{1,5})$/;

export function registerServeCommand(program: Command): void {
  program
    .command('serve')
    .description(`serve the HTTP API for a Strata home (default ${DEFAULT_LISTEN}; port 0 picks a free port)`)
    .option('--home <dir>', 'Strata home (default: $STRATA_HOME, else $XDG_DATA_HOME/strata)')
    .option('--listen <host:port>', 'address to listen on', DEFAULT_LISTEN)
    .option('--environment <name>', 'environment tag of keys this server issues')
    .option('--quiet', 'no request log')
    .action(async (options: { home?: string; listen: string; environment?: string; quiet?: boolean }, command: Command) => {
      const ctx = contextFor(command);
      const match = LISTEN.exec(options.listen);
      if (!match || Number(match[2]) > 65535) {
        throw usageError(`--listen must be HOST:PORT, got '${options.listen}'`, { field: 'listen' });
      }
      const { resolveHome } = await import('../../server/home.js');
      const { startServer } = await import('../../server/serve.js');
      const home = resolveHome(options.home);

      // Handlers go in before the server starts: a supervisor (or a test) may signal as soon as it
      // reads the "listening on" line, and a signal with no handler kills the process uncleanly.
      let server: { url: string; close(): Promise<void> } | undefined;
      let stopping = false;
      const close = () => {
        const timer = setTimeout(() => {
          process.stderr.write('strata: close timed out, exiting\n');
          process.exit(1);
        }, CLOSE_TIMEOUT_MS);
        timer.unref();
        (server?.close() ?? Promise.resolve()).then(
          () => process.exit(0),
          (error: unknown) => {
            process.stderr.write(`strata: close failed: ${error instanceof Error ? error.message : String(error)}\n`);
            process.exit(1);
          },
        );
      };
      const stop = (signal: NodeJS.Signals) => {
        if (stopping) {
          process.stderr.write(`strata: ${signal} again, exiting without waiting\n`);
          process.exit(1);
        }
        stopping = true;
        process.stderr.write(`strata: ${signal}, closing (finishing requests in flight)...\n`);
        if (server) close(); // else: closed right after startServer returns
      };
      process.on('SIGTERM', stop);
      process.on('SIGINT', stop);

      try {
        server = await startServer({
          home,
          listen: options.listen,
          ...(options.quiet ? { logger: false } : {}),
          ...(options.environment === undefined ? {} : { environment: options.environment }),
        });
      } catch (error) {
        throw listenError(error, options.listen);
      }
      if (stopping) {
        close();
        return;
      }
      // Tests and scripts read this line to learn the port chosen for --listen HOST:0.
      process.stderr.write(`strata: serving ${home}\nlistening on ${server.url}\n`);
      if (ctx.output.json) ctx.output.result({ url: server.url, home }, () => {});
    });
}

/** "address in use" is the common first-run problem (a second `strata serve`); say so plainly. */
function listenError(error: unknown, listen: string): unknown {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  if (code === 'EADDRINUSE' || code === 'EACCES' || code === 'EADDRNOTAVAIL') {
    const why = code === 'EADDRINUSE' ? 'the address is in use (another strata serve?)' : code === 'EACCES' ? 'permission denied' : 'no such local address';
    return new CliError('LISTEN_FAILED', `cannot listen on ${listen}: ${why}`, { exitCode: EXIT.unexpected, details: { listen, cause: code }, cause: error });
  }
  return error;
}
