import { describe, expect, it } from 'vitest'
import { createSelfTestSuite } from '../../../shared/crypto/self-test'
import mlDsaKeyGen from '../../../test/fixtures/acvp/ml-dsa-keygen.json'
import mlDsaSigGen from '../../../test/fixtures/acvp/ml-dsa-siggen.json'
import mlDsaSigVer from '../../../test/fixtures/acvp/ml-dsa-sigver.json'
import mlKemEncapDecap from '../../../test/fixtures/acvp/ml-kem-encapdecap.json'
import mlKemKeyGen from '../../../test/fixtures/acvp/ml-kem-keygen.json'
import slhDsaKeyGen from '../../../test/fixtures/acvp/slh-dsa-keygen.json'
import { SELF_TEST_SOURCES, VECTOR_SETS } from './conformance-manifest'

const merkleFiles = import.meta.glob('../../../test/fixtures/merkle/**/*.json', {
  query: '?raw',
  import: 'default',
  eager: true,
})

const fixtures: Record<string, { revision: string; testGroups: { tests: unknown[] }[] }> = {
  'test/fixtures/acvp/ml-dsa-keygen.json': mlDsaKeyGen,
  'test/fixtures/acvp/ml-dsa-siggen.json': mlDsaSigGen,
  'test/fixtures/acvp/ml-dsa-sigver.json': mlDsaSigVer,
  'test/fixtures/acvp/ml-kem-keygen.json': mlKemKeyGen,
  'test/fixtures/acvp/ml-kem-encapdecap.json': mlKemEncapDecap,
  'test/fixtures/acvp/slh-dsa-keygen.json': slhDsaKeyGen,
}

describe('conformance manifest (what /trust/conformance publishes)', () => {
  it('counts the cases and names the revision of every fixture it lists', () => {
    for (const set of VECTOR_SETS) {
      if (set.fixture.endsWith('/')) {
        expect(Object.keys(merkleFiles).length, set.id).toBe(set.cases)
        continue
      }
      const fixture = fixtures[set.fixture]
      expect(fixture, set.fixture).toBeDefined()
      expect(fixture!.revision).toBe(set.revision)
      expect(
        fixture!.testGroups.reduce((n, g) => n + g.tests.length, 0),
        set.id,
      ).toBe(set.cases)
    }
  })

  it.each(['webcrypto', 'noble'] as const)(
    'gives the source of every runtime self-test on %s',
    async (implementation) => {
      const report = await createSelfTestSuite(undefined, { postQuantum: () => implementation }).run()
      expect(report.tests.map((t) => t.name).filter((name) => !SELF_TEST_SOURCES[name])).toEqual([])
    },
  )
})
