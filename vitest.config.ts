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
        },
      },
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
