import type { KeyObject } from 'node:crypto';
import type { MetadataRepository } from '../ports/metadata-repository.js';
import type { Clock, IdGenerator } from '../ports/world.js';
import type { TokenVerifier } from './token-verifier.js';

/** What the access functions use: injected like the engine's world, so tests can freeze time. */
export interface AccessDeps {
  repository: MetadataRepository;
  clock: Clock;
  ids: IdGenerator;
  /**
   * HMAC key for API key secrets; kept outside the database (a file or the environment). Hosts pass a
   * KeyObject made once: createHmac with a raw Buffer builds one per call (15 us against 2.3 us here,
   * on every authenticated request).
   */
  pepper: Buffer | KeyObject;
  /** the deployment's environment label; a key minted for another environment never authenticates */
  environment: string;
  /** verifies OIDC access tokens; absent when no issuer is configured (then only API keys work) */
  tokens?: TokenVerifier;
  /**
   * access tokens (by jti) this process has seen: the first request with a new one is a sign-in,
   * audited as `auth.login`. Absent: sign-ins are not audited.
   */
  signIns?: Set<string>;
}
