// Summarises a V8 CPU profile (`node --cpu-prof`): self time by function and by file, so a missed
// target can be traced to the function that costs it. Usage: node dist/bench/profile-summary.js FILE [TOP]
import { readFileSync } from 'node:fs';
import { printTable } from './lib/table.js';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}

function main(): void {
  const [file, topArg] = process.argv.slice(2);
  if (file === undefined) throw new TypeError('usage: profile-summary FILE.cpuprofile [TOP]');
  const top = Number(topArg ?? 25);
  const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const selfUs = new Map<number, number>();
  profile.samples.forEach((id, i) => {
    selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0));
  });
  const total = profile.endTime - profile.startTime;
  const byFunction = new Map<string, number>();
  const byFile = new Map<string, number>();
  for (const [id, us] of selfUs) {
    const frame = byId.get(id)!.callFrame;
    const where = frame.url.replace(/^file:\/\/.*?\/(dist|node_modules)\//, '$1/') || '(native)';
    const name = `${frame.functionName || '(anonymous)'}  ${where}:${frame.lineNumber + 1}`;
    byFunction.set(name, (byFunction.get(name) ?? 0) + us);
    byFile.set(where, (byFile.get(where) ?? 0) + us);
  }
  const rows = (m: Map<string, number>) =>
    [...m]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([name, us]) => [name.slice(0, 110), us / 1000, `${((100 * us) / total).toFixed(1)}%`]);
  console.log(`${file}: ${(total / 1e6).toFixed(2)} s wall`);
  printTable('Self time by function', ['function  file:line', 'ms', 'share'], rows(byFunction));
  printTable('Self time by file', ['file', 'ms', 'share'], rows(byFile));
}

main();
