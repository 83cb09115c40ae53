/** The committed validators are what the zod schemas generate today (run in Node: Ajv compiles there). */
import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { generate, TARGETS } from './generate-validators.ts'

describe('generated validators', () => {
  for (const target of TARGETS) {
    it(`${target.file} is up to date (npm run generate:validators)`, () => {
      expect(readFileSync(target.file, 'utf8')).toBe(generate(target))
    })
  }
})
