import { cloudflareTest } from '@cloudflare/vitest-plugin'
import { defineConfig } from 'vitest/config'

/**
 * Two kinds of tests:
 * - unit: colocated `*.test.ts` files run inside workerd (Cloudflare's vitest integration),
 *   so they see the same runtime as production code.
 * - e2e: `test/e2e/**` start the whole stack the way README says (scripts/start.ts) and call it
 *   over HTTP with real clients, once on embedded PGlite and once on the real PostgreSQL server.
 */
export default defineConfig({
  test: {
    projects: [
      {
        plugins: [
          cloudflareTest({
            miniflare: {
              compatibilityDate: '2026-10-01',
              compatibilityFlags: ['nodejs_compat'],
            },
          }),
        ],
        test: {
          name: 'unit',
          include: [
            'shared/**/*.test.ts',
            'functions/**/*.test.ts',
            'durable-objects/**/*.test.ts',
            'test/unit/**/*.test.ts',
          ],
          exclude: ['**/*.do.test.ts', '**/node_modules/**'],
        },
      },
      // Durable Objects run inside the worker that hosts them (its wrangler config), so alarms,
      // storage and RPC are the real ones; tests drive alarms with runDurableObjectAlarm.
      ...(
        [
          ['chat', 'rate-limiter'],
          ['code', 'agent-run'],
        ] as const
      ).map(([family, durableObject]) => ({
        plugins: [cloudflareTest({ wrangler: { configPath: `functions/${family}/wrangler.toml` } })],
        test: {
          name: `do-${family}`,
          include: [`durable-objects/${durableObject}*.do.test.ts`, `functions/${family}/**/*.do.test.ts`],
          passWithNoTests: true,
        },
      })),
      ...(['pglite', 'postgres'] as const).map((kind) => ({
        test: {
          name: `e2e-${kind}`,
          include: ['test/e2e/**/*.e2e.test.ts'],
          environment: 'node',
          globalSetup: [`test/e2e/${kind}.setup.ts`],
          testTimeout: 30_000,
          hookTimeout: 120_000,
        },
      })),
    ],
  },
})
