/**
 * The served OpenAPI document passes Redocly's linter (its recommended rules) with no error and
 * no warning, a client generated from it (openapi-typescript) gets the upgrade decision typed,
 * and the reference page renders it without any request leaving this origin.
 */
import { execFile } from 'node:child_process'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'
import { describe, expect, inject, it } from 'vitest'
import { ROUTES } from '../../shared/routing/route-table.ts'
import { OTLP_MEDIA_TYPES } from '../../shared/telemetry/otlp-content-types.ts'
import { createWorkspace } from './chat-fixtures.ts'

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

  it('a client generated with openapi-typescript reads svc_upgrade typed: the snippet compiles, and misuses of the closed enums do not', async () => {
    const res = await fetch(url('/openapi.json'))
    expect(res.status).toBe(200)
    const dir = await mkdtemp(path.join(tmpdir(), 'svc-openapi-client-'))
    try {
      await writeFile(path.join(dir, 'openapi.json'), await res.text())
      await run(process.execPath, [
        path.resolve('node_modules/openapi-typescript/bin/cli.js'),
        path.join(dir, 'openapi.json'),
        '--output',
        path.join(dir, 'svc-api.ts'),
      ])
      // Every `@ts-expect-error` line must be an error, or tsc fails on the unused directive: the
      // types are closed, not `unknown`.
      await writeFile(
        path.join(dir, 'client.ts'),
        `import type { components, paths } from './svc-api'

type Chat = paths['/svc/chat/completions']['post']['responses']
type Turns = paths['/svc/code/v1/turns']['post']['responses']
type UpgradeDecision = components['schemas']['UpgradeDecision']

export function resetsAt(body: Chat[402]['content']['application/json']): string | null | undefined {
  return body.svc_upgrade.binding_limit?.resets_at
}
export function reasonInsideError(body: Turns[429]['content']['application/json']): UpgradeDecision['reason'] {
  return body.error.svc_upgrade.reason
}
export function schemaVersion(body: Chat[429]['content']['application/json']): '2026-07-31' {
  return body.svc_upgrade.schema_version
}
export function forbidden(body: Chat[403]['content']['application/json']): string {
  return 'svc_upgrade' in body ? body.svc_upgrade.reason : body.error.code
}
export function limitKind(decision: UpgradeDecision): 'tokens' | 'requests' | 'seconds' | 'credits' | 'context' | 'rate' | 'documents' | 'storage' | undefined {
  return decision.binding_limit?.kind
}
// @ts-expect-error reason is a closed enum
export const notAReason: UpgradeDecision['reason'] = 'because'
// @ts-expect-error an upgrade action kind is a closed enum
export const notAnAction: UpgradeDecision['actions'][number]['kind'] = 'pay_more'
// @ts-expect-error the binding limit has no such field
export const noSuchField = (decision: UpgradeDecision) => decision.binding_limit?.resets_on
`,
      )
      const compiled = await run(
        process.execPath,
        [
          path.resolve('node_modules/typescript/bin/tsc'),
          '--noEmit',
          '--strict',
          '--skipLibCheck',
          '--target',
          'es2022',
          '--module',
          'esnext',
          '--moduleResolution',
          'bundler',
          path.join(dir, 'client.ts'),
        ],
        { maxBuffer: 16 * 1024 * 1024 },
      ).catch((err: { stdout?: string; stderr?: string }) => ({
        stdout: `${err.stdout ?? ''}${err.stderr ?? ''}` || 'tsc failed',
      }))
      expect(compiled.stdout).toBe('')
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

  it('every route answers only statuses its operation documents: without a credential, and for fresh workspaces on two plans', async () => {
    const doc = (await (await fetch(url('/openapi.json'))).json()) as {
      paths: Record<string, Record<string, { responses: Record<string, unknown> }>>
    }
    const free = await createWorkspace('free')
    const team = await createWorkspace('team')
    const bodies: Record<string, { type: string; body: string }> = {
      json: { type: 'application/json', body: '{}' },
      form: { type: 'application/x-www-form-urlencoded', body: '' },
      multipart: { type: 'multipart/form-data; boundary=x', body: '--x--\r\n' },
      otlp: { type: 'application/json', body: '{}' },
    }
    let checked = 0
    for (const route of ROUTES) {
      const op = doc.paths[route.path.replace(/:([A-Za-z]+)/g, '{$1}')]?.[route.method.toLowerCase()]
      if (!op) continue // not advertised (GET and DELETE /mcp answer 405)
      const sent = route.body ? bodies[route.body.kind] : undefined
      for (const key of [null, free.testKey, team.liveKey]) {
        const res = await fetch(url(route.path.replace(/:[A-Za-z]+/g, () => crypto.randomUUID())), {
          method: route.method,
          headers: {
            ...(key ? { authorization: `Bearer ${key}` } : {}),
            ...(sent ? { 'content-type': sent.type } : {}),
          },
          ...(sent ? { body: sent.body } : {}),
          redirect: 'manual',
        })
        const text = await res.text()
        expect(
          Object.keys(op.responses),
          `${route.method} ${route.path} answered ${res.status}: ${text.slice(0, 200)}`,
        ).toContain(String(res.status))
        checked += 1
      }
    }
    expect(checked).toBeGreaterThan(200)
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
