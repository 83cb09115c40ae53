import { describe, expect, it } from 'vitest'
import lock from '../../../package-lock.json'
import generated from './crypto-libraries.generated.json'
import { buildFacts } from './crypto-library-list'

describe('crypto-libraries.generated.json', () => {
  it('names exactly the versions and integrity hashes package-lock.json pins (npx tsx scripts/crypto-libraries.ts)', () => {
    expect(generated).toEqual(buildFacts(lock as unknown as Parameters<typeof buildFacts>[0]))
  })
})
