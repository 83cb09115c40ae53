/** The committed validators are what the zod schemas generate today (run in Node: Ajv compiles there). */
import { readFileSync } from 'node:fs'
import { describe, expect, it, vi } from 'vitest'
import { generate, TARGETS } from './generate-validators.ts'

describe('generated validators', () => {
  for (const target of TARGETS) {
    it(`${target.file} is up to date (npm run generate:validators)`, () => {
      expect(readFileSync(target.file, 'utf8')).toBe(generate(target))
    })
  }

  it('generates without printing anything (npm start runs it)', () => {
    const warn = vi.spyOn(console, 'warn')
    const log = vi.spyOn(console, 'log')
    try {
      for (const target of TARGETS) generate(target)
      expect([...warn.mock.calls, ...log.mock.calls]).toEqual([])
    } finally {
      warn.mockRestore()
      log.mockRestore()
    }
  })
})
