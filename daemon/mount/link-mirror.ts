// The versions of a hard-linked file's other names (link-groups.ts): each name's history shows every
// content the file had. After the primary's capture, and when a name is made, the name gets the
// primary's current version as a write of its own — or nothing, when it has that content already.
import { baseContent } from './capture.js';
import { type BaseRef, baseOf } from './file-node.js';
import type { MountState } from './mount-state.js';
import type { SinkResult } from './sink.js';

/** Brings `name` to its primary's recorded content; null when there is nothing to do (yet). */
export async function mirrorName(state: MountState, name: string): Promise<SinkResult | null> {
  const primary = state.links.primaryOf(name);
  if (primary === name) return null;
  const node = state.ns.nodes.get(primary);
  let base: BaseRef;
  if (node !== undefined) {
    // Content not recorded yet: the primary's capture comes first and schedules its names again.
    if (node.dirty || node.enginePath !== primary || node.base === null) return null;
    base = node.base;
  } else {
    const entry = await state.engine.stat({ projectId: state.projectId, path: primary });
    if (entry === null) return null;
    base = baseOf(entry);
  }
  const current = await state.engine.stat({ projectId: state.projectId, path: name });
  if (current !== null && current.contentHash === base.hash && current.executable === base.executable && current.symlink === base.symlink) return null;
  return state.sink.write(name, await baseContent(state, base), base.executable, base.symlink);
}
