import type { FastifyInstance } from 'fastify';

/**
 * Closes the server, letting requests in flight finish for at most `drainMs`. A client that stops
 * reading a download (or sends a long upload slowly) would otherwise hold the close, and with it
 * the process's stop, until the stop's own deadline ran out: the daemon then exited 1 after 30 s.
 * Past the deadline every connection is closed; a request cut short was never acknowledged.
 */
export async function closeDraining(app: FastifyInstance, drainMs: number): Promise<void> {
  const closed = app.close();
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<'deadline'>((resolve) => {
    timer = setTimeout(() => resolve('deadline'), drainMs);
    timer.unref();
  });
  const first = await Promise.race([closed.then(() => 'closed' as const), deadline]);
  clearTimeout(timer);
  if (first === 'deadline') app.server.closeAllConnections();
  await closed;
}
