// When V8 starts a full (mark-compact) collection. Before V8 14.8, every byte allocated in a buffer
// since the last mark-compact counts towards the old generation's limit, dead or alive
// (`Heap::OldGenerationSpaceAvailable`), so a process that moves bulk bytes through short-lived
// buffers marks its whole heap every few megabytes: 64 KiB socket reads, 1 MiB file reads, the 4 MiB
// blocks a chunking thread hands back. Measured on the 500 MiB clone (2026-11-29, Node 24 / V8 13.6):
// the daemon ran 25-29 mark-compacts of its 30 MB heap per pull (perf: 27 % of its CPU in the
// collector), for buffers that were garbage by then; with the flag 16-20, and 11 % less CPU for the
// pull, its peak RSS 20-55 MB higher. `strata serve` reading the file out (25-31 per read in a "storm",
// 0-2 when calm) was not measurably helped: which mode a process falls into did not follow the flag
// (docs/benchmarks.md, "Full collections started by buffers").
//
// `--external-memory-accounted-in-global-limit` counts what buffers hold instead, within the limit
// the heap is held to; V8 turned it on by default in 14.8 and removed the flag there. It is set at
// run time rather than on bin/strata's command line, because a Node that does not know a V8 flag
// refuses to start with it (V8 before 13 does not have it; from 14.8 it is how V8 works anyway).
import { setFlagsFromString } from 'node:v8';

export const EXTERNAL_MEMORY_FLAG = '--external-memory-accounted-in-global-limit';

/** The flag this V8 needs set, or null (too old to have it, or new enough to do it by default). */
export function heapFlagFor(v8Version: string): string | null {
  const [major = 0, minor = 0] = v8Version.split('.').map((part) => Number.parseInt(part, 10));
  if (!Number.isFinite(major) || !Number.isFinite(minor) || major < 13) return null;
  if (major > 14 || (major === 14 && minor >= 8)) return null;
  return EXTERNAL_MEMORY_FLAG;
}

/** Sets it for this process (its worker threads included: V8's flags are process-wide). */
export function applyHeapFlags(v8Version: string = process.versions.v8): string | null {
  const flag = heapFlagFor(v8Version);
  if (flag !== null) setFlagsFromString(flag);
  return flag;
}
