/**
 * The served OpenAPI document passes Redocly's linter (its recommended rules) with no error and
 * no warning, and the reference page renders it without any request leaving this origin.
 */
import { execFile } from 'node:child_process'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'
import { describe, expect, inject, it } from 'vitest'
import { OTLP_MEDIA_TYPES } from '../../shared/telemetry/otlp-content-types.ts'

const stack = inject('stack')
const url = (p: string) => `${stack.baseUrl}${p}`
const run = promisify(execFile)

interface LintProblem {
  ruleId: string
  severity: 'error' | 'warn'
  message: string
  location: { pointer?: string }[]
}

describe(`OpenAPI document (${stack.kind})`, () => {
  it("passes Redocly's lint with 0 errors and 0 warnings", async () => {
    const res = await fetch(url('/openapi.json'))
    expect(res.status).toBe(200)
    const dir = await mkdtemp(path.join(tmpdir(), 'svc-openapi-'))
    try {
      const file = path.join(dir, 'openapi.json')
      await writeFile(file, await res.text())
      const cli = path.resolve('node_modules/@redocly/cli/bin/cli.js')
      const output = await run(
        process.execPath,
        [cli, 'lint', file, '--format=json', '--config', path.resolve('redocly.yaml')],
        {
          maxBuffer: 64 * 1024 * 1024,
          env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' },
        },
      ).catch((err: { stdout?: string }) => ({ stdout: err.stdout ?? '' }))
      const report = JSON.parse(output.stdout) as { problems: LintProblem[] }
      const problems = report.problems.map(
        (p) => `${p.severity} ${p.ruleId}: ${p.message} at ${p.location[0]?.pointer ?? '?'}`,
      )
      expect(problems).toEqual([])
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  })

  it('every operation has a unique operationId and documents its success (2xx or a redirect) and 4xx answers', async () => {
    const doc = (await (await fetch(url('/openapi.json'))).json()) as {
      paths: Record<string, Record<string, { operationId?: string; responses: Record<string, unknown> }>>
    }
    const ids = new Set<string>()
    for (const [p, operations] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(operations)) {
        expect(op.operationId, `${method} ${p}`).toBeTruthy()
        expect(ids.has(op.operationId!), `${op.operationId} is used twice`).toBe(false)
        ids.add(op.operationId!)
        const codes = Object.keys(op.responses)
        expect(
          codes.some((code) => /^[23]/.test(code)),
          `${method} ${p}: ${codes}`,
        ).toBe(true)
        expect(
          codes.some((code) => /^4/.test(code)),
          `${method} ${p}: ${codes}`,
        ).toBe(true)
      }
    }
  })

  it('documents the telemetry routes: OTLP exports with every accepted encoding and their refusals, results, status, observability tokens', async () => {
    const doc = (await (await fetch(url('/openapi.json'))).json()) as {
      paths: Record<
        string,
        Record<
          string,
          { requestBody?: { content: Record<string, unknown> }; responses: Record<string, unknown> }
        >
      >
    }
    for (const signal of ['traces', 'metrics', 'logs']) {
      const op = doc.paths[`/otlp/v1/${signal}`]?.post
      expect(op, `POST /otlp/v1/${signal}`).toBeDefined()
      expect(Object.keys(op!.requestBody!.content).sort()).toEqual(Object.keys(OTLP_MEDIA_TYPES).sort())
      expect(Object.keys(op!.responses).sort()).toEqual(
        ['200', '400', '401', '403', '413', '415', '429', '503'].sort(),
      )
    }
    const operations = (p: string) => Object.keys(doc.paths[p] ?? {}).sort()
    expect(operations('/platform/v1/telemetry/ingestions')).toEqual(['get'])
    expect(operations('/platform/v1/telemetry/status')).toEqual(['get'])
    expect(operations('/platform/v1/observability-tokens')).toEqual(['get', 'post'])
    expect(operations('/platform/v1/observability-tokens/{tokenId}/rotate')).toEqual(['post'])
    expect(operations('/platform/v1/observability-tokens/{tokenId}')).toEqual(['delete'])
  })

  it('renders the interactive reference from this origin only', async () => {
    const page = await fetch(url('/docs'))
    expect(page.status).toBe(200)
    expect(page.headers.get('content-type')).toContain('text/html')
    const csp = page.headers.get('content-security-policy') ?? ''
    expect(csp).toContain("default-src 'self'")
    expect(csp).toContain("connect-src 'self'")
    const html = await page.text()
    const sources = [...html.matchAll(/\b(?:src|href)="([^"]+)"/g)].map((m) => m[1]!)
    expect(sources).toContain('/docs/scalar.js')
    for (const source of sources) expect(source.startsWith('/'), source).toBe(true)
    expect(html).toContain('/openapi.json')
    const script = await fetch(url('/docs/scalar.js'))
    expect(script.status).toBe(200)
    expect(script.headers.get('content-type')).toContain('javascript')
    expect((await script.text()).length).toBeGreaterThan(100_000)
  })
})
