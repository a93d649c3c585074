// A load generator in its own process (autocannon), so that a flood and the measurement of another
// client do not share one event loop: prints autocannon's result as one JSON line.
// Usage: node dist/bench/load-child.js URL BEARER CONNECTIONS SECONDS [RATE]

import autocannon from 'autocannon';

const [url, bearer, connections, seconds, rate] = process.argv.slice(2);
const result = await autocannon({
  url: url!,
  connections: Number(connections),
  duration: Number(seconds),
  headers: { authorization: `Bearer ${bearer}` },
  ...(rate === undefined ? {} : { overallRate: Number(rate) }),
});
process.stdout.write(`${JSON.stringify(result)}\n`);
