import { bootstrapOrganization } from '../engine/access/bootstrap.js';
import { createIdGenerator } from '../engine/ids.js';
import { openLocalEngine } from '../engine/local.js';
import { type Clock, systemClock } from '../engine/ports/world.js';
import { loadPepper, resolveEnvironment } from './secrets.js';

/**
 * First run of a home: pepper, first organization, an owner service identity and its API key (the
 * plaintext key is in the result only). ALREADY_BOOTSTRAPPED if the home has an organization.
 */
export async function bootstrapHome(options: {
  home: string;
  environment?: string;
  clock?: Clock;
}): Promise<{ apiKey: string; orgId: string; keyId: string; identityId: string }> {
  const environment = resolveEnvironment(options.environment);
  const clock = options.clock ?? systemClock;
  const pepper = await loadPepper(options.home, { create: true });
  const local = await openLocalEngine({ home: options.home, clock });
  try {
    return await bootstrapOrganization({ repository: local.repository, clock, ids: createIdGenerator(clock), pepper, environment });
  } finally {
    await local.close();
  }
}
