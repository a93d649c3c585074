// Whether another host uses a home (server/home-claim.ts), for the commands that would otherwise say
// "daemon: not running": on a second node of a cluster, the home's daemon runs — on the first node,
// where this node can neither see its pid nor reach its loopback address. Read-only: the lock file's
// record, judged against this host's identity.

import { readFileSync } from 'node:fs';
import { homeLockFile } from '../server/home-claim.js';
import { judgeLease, leaseMsFromEnv, leaseTiming } from '../server/home-lease.js';
import { currentHost, describeHost } from '../server/host-identity.js';
import { CliError, EXIT } from './errors.js';

export interface HomeElsewhere {
  /** 'host node1', 'host node1 (another pid namespace ...)' */
  where: string;
  host: string;
  pid: number;
  holder: string;
  since: string;
  renewedAt: string;
  /** until the lease lapses if it is not renewed */
  lapsesInMs: number;
}

/** The other host whose live lease holds `home`, or null (no record, this host's, released or lapsed). */
export function homeElsewhere(home: string): HomeElsewhere | null {
  let text: string;
  try {
    text = readFileSync(homeLockFile(home), 'utf8');
  } catch {
    return null;
  }
  const self = currentHost();
  const verdict = judgeLease(text, self, Date.now(), leaseTiming(leaseMsFromEnv()));
  if (verdict.kind !== 'live') return null;
  const { record } = verdict;
  return { where: describeHost(record, self), host: record.host, pid: record.pid, holder: record.holder, since: record.since, renewedAt: record.renewedAt, lapsesInMs: verdict.lapsesInMs };
}

/** One line for people: who holds the home, since when. */
export function elsewhereLine(home: string, other: HomeElsewhere): string {
  return `the Strata home ${home} is in use on ${other.where}: \`${other.holder}\` (pid ${other.pid} there) since ${other.since}, lease renewed ${other.renewedAt}`;
}

/** HOME_HELD_BY_HOST (exit 4) naming the host, when another host holds `home`; `doing` says what this command needed. */
export function refuseIfElsewhere(home: string, doing: string): void {
  const other = homeElsewhere(home);
  if (other === null) return;
  throw new CliError(
    'HOME_HELD_BY_HOST',
    `${elsewhereLine(home, other)}. ${doing} needs the home on this host, and a home is used from one host at a time (two hosts' SQLite writes corrupt it): run the command on ${other.host}, or stop Strata there first (Ctrl-C its \`strata daemon\` or \`strata watch\`, \`systemctl --user stop strata-daemon\` for the service, or end the job that runs it)`,
    { exitCode: EXIT.conflict, details: { home, host: other.host, pid: other.pid, holder: other.holder, since: other.since, renewedAt: other.renewedAt } },
  );
}
