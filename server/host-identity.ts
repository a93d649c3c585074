// Which machine (and which boot of it) this process runs on, for the home's claim (home-claim.ts).
//
// A pid says nothing across machines: a daemon on another node of a cluster found the pid of the
// daemon that held a home on NFS missing from its own process table, took the lock as stale, and the
// two daemons' writes left metadata.sqlite, the store's pack and state.sqlite "malformed" (issue 38).
// So a claim names its host: the host name for people; /etc/machine-id (per installation: diskless
// nodes booted from one image may share it, hence not alone), /proc/sys/kernel/random/boot_id (new at
// every boot) and the pid namespace (a container, or `unshare --pid`, cannot see the pids of its
// neighbours on the same kernel) for the comparison. Two processes are on "the same host" for the
// claim only when all four agree: only then does a pid in the claim mean something to the reader.

import { readFileSync, readlinkSync } from 'node:fs';
import { hostname } from 'node:os';

export interface HostIdentity {
  /** the host name, as people know the node */
  host: string;
  /** /etc/machine-id (or /var/lib/dbus/machine-id); '' where there is none */
  machineId: string;
  /** /proc/sys/kernel/random/boot_id; '' where there is none */
  bootId: string;
  /** the pid namespace (`pid:[4026531836]`); '' where /proc does not say */
  pidNs: string;
}

function firstLine(files: string[]): string {
  for (const file of files) {
    try {
      const text = readFileSync(file, 'utf8').trim();
      if (text !== '') return text;
    } catch {
      // not there on this system: the next candidate
    }
  }
  return '';
}

/** This process's host identity (read once per call: cheap, a few small files). */
export function currentHost(): HostIdentity {
  let pidNs = '';
  try {
    pidNs = readlinkSync('/proc/self/ns/pid');
  } catch {
    // not Linux, or /proc not mounted
  }
  return {
    host: hostname(),
    machineId: firstLine(['/etc/machine-id', '/var/lib/dbus/machine-id']),
    bootId: firstLine(['/proc/sys/kernel/random/boot_id']),
    pidNs,
  };
}

/** Whether `a` and `b` are one host for the claim: same name, installation, boot and pid namespace. */
export function sameHost(a: HostIdentity, b: HostIdentity): boolean {
  return a.host === b.host && a.machineId === b.machineId && a.bootId === b.bootId && a.pidNs === b.pidNs;
}

/**
 * How a host is named to a person: its name, and what else tells it apart when the names agree (a
 * container on the same node, the same node after a reboot).
 */
export function describeHost(other: HostIdentity, self: HostIdentity): string {
  if (other.host !== self.host) return `host ${other.host}`;
  if (other.machineId === self.machineId && other.bootId !== self.bootId) return `host ${other.host} before its last reboot`;
  if (other.machineId === self.machineId && other.pidNs !== self.pidNs) return `host ${other.host} (another pid namespace: a container or \`unshare --pid\`)`;
  return `another machine named ${other.host}`;
}
