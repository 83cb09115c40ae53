import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { unstable_readConfig } from 'wrangler'
import { ROOT, workerConfigPaths } from './workers'

describe('compatibility flags of the deployed workers', () => {
  it('every worker sets webcrypto_modern_algorithms, so ML-DSA and ML-KEM run in the runtime', () => {
    // Without it a worker still works, silently, on the JavaScript fallback (shared/crypto/post-quantum.ts),
    // 25-40 times slower per signature: a worker that signs or verifies must not lose it unnoticed.
    const configs = workerConfigPaths().map((p) => unstable_readConfig({ config: path.join(ROOT, p) }))
    expect(configs.length).toBeGreaterThan(5)
    for (const config of configs) {
      expect(config.compatibility_flags, config.name).toContain('webcrypto_modern_algorithms')
    }
  })
})
