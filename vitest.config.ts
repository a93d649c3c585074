import { defineConfig } from 'vitest/config';

export const config = defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Tests share the machine's 2 cores; files run in parallel, tests inside a file in order.
    pool: 'forks',
    maxWorkers: 2,
  },
});

// biome-ignore lint/style/noDefaultExport: vitest discovers its config through the default export.
export default config;
