import { readFileSync } from 'node:fs'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import {
  deploymentPublicBaseUrl,
  planDeploy,
  readConfigBindings,
  readWorkerBindings,
  withoutBindings,
} from './deploy-plan'
import { ROOT, workerConfigPaths } from './workers'

const real = () => workerConfigPaths().map((p) => readConfigBindings(path.join(ROOT, p)))

/** Replays the steps: every upload binds only scripts that already exist. */
function replay(steps: ReturnType<typeof planDeploy>, workers: ReturnType<typeof real>) {
  const exists = new Set<string>()
  const problems: string[] = []
  for (const step of steps) {
    const w = workers.find((x) => x.name === step.name)!
    for (const t of w.targets)
      if (!step.omit.includes(t.binding) && !exists.has(t.script))
        problems.push(`${w.name}.${t.binding} -> ${t.script} before it exists`)
    exists.add(w.name)
  }
  return problems
}

describe('the deploy order', () => {
  it('on a fresh account, no upload binds a script that does not exist yet, and every worker ends whole', () => {
    const workers = real()
    const steps = planDeploy(workers, { bootstrap: true, last: 'svc-gateway' })
    expect(replay(steps, workers)).toEqual([])
    for (const w of workers) {
      const lastUpload = steps.filter((s) => s.name === w.name).at(-1)
      expect(lastUpload, w.name).toEqual({ name: w.name, omit: [] })
    }
    // The cycles today: svc-auth appends to svc-platform's AuditLog, svc-platform calls svc-auth;
    // svc-console calls the API through svc-gateway, which routes to svc-console.
    const partial = steps.filter((s) => s.omit.length > 0)
    expect(partial.sort((a, b) => a.name.localeCompare(b.name))).toEqual([
      { name: 'svc-auth', omit: ['AUDIT_LOG'] },
      { name: 'svc-console', omit: ['GATEWAY'] },
    ])
    expect(steps.slice(-2)).toEqual([
      { name: 'svc-gateway', omit: [] },
      { name: 'svc-console', omit: [] },
    ])
  })

  it('on an existing account, every worker is uploaded once, whole, in the same order', () => {
    const workers = real()
    const steps = planDeploy(workers, { last: 'svc-gateway' })
    expect(steps.map((s) => s.name).sort()).toEqual(workers.map((w) => w.name).sort())
    expect(steps.every((s) => s.omit.length === 0)).toBe(true)
    expect(steps.findIndex((s) => s.name === 'svc-metering')).toBeLessThan(
      steps.findIndex((s) => s.name === 'svc-chat'),
    )
    // The public entry point changes only when everything behind it is in place.
    expect(steps.at(-1)).toEqual({ name: 'svc-gateway', omit: [] })
  })

  it('refuses a binding to a worker that is not in the repository', () => {
    expect(() => planDeploy([{ name: 'a', targets: [{ binding: 'B', script: 'nope' }] }])).toThrow(/nope/)
  })

  it('reads and removes bindings in a config', () => {
    const toml = [
      'name = "svc-x"',
      '[[durable_objects.bindings]]',
      'name = "LOG"',
      'class_name = "AuditLog"',
      'script_name = "svc-y"',
      '',
      '[[durable_objects.bindings]]',
      'name = "OWN"',
      'class_name = "Own"',
      '[[services]]',
      'binding = "Z"',
      'service = "svc-z"',
      '[vars]',
      'A = "1"',
    ].join('\n')
    expect(readWorkerBindings(toml)).toEqual({
      name: 'svc-x',
      targets: [
        { binding: 'LOG', script: 'svc-y' },
        { binding: 'Z', script: 'svc-z' },
      ],
    })
    const stripped = withoutBindings(toml, ['LOG'])
    expect(stripped).not.toContain('svc-y')
    expect(stripped).toContain('name = "OWN"')
    expect(stripped).toContain('[vars]')
    expect(readWorkerBindings(stripped).targets).toEqual([{ binding: 'Z', script: 'svc-z' }])
  })
})

describe("a deployment's PUBLIC_BASE_URL", () => {
  it('is required, from the environment (first) or the gateway config', () => {
    expect(() => deploymentPublicBaseUrl({}, {})).toThrow(
      /PUBLIC_BASE_URL is not set.*\[vars\] in wrangler.toml/,
    )
    expect(() => deploymentPublicBaseUrl({ PUBLIC_BASE_URL: '  ' }, { PUBLIC_BASE_URL: '' })).toThrow(
      /not set/,
    )
    expect(deploymentPublicBaseUrl({ PUBLIC_BASE_URL: 'https://api.example.com/' }, {})).toEqual({
      url: 'https://api.example.com',
      from: 'environment',
    })
    expect(deploymentPublicBaseUrl({}, { PUBLIC_BASE_URL: 'https://svc.example.org' })).toEqual({
      url: 'https://svc.example.org',
      from: 'wrangler.toml',
    })
    expect(
      deploymentPublicBaseUrl(
        { PUBLIC_BASE_URL: 'https://a.example' },
        { PUBLIC_BASE_URL: 'https://b.example' },
      ).url,
    ).toBe('https://a.example')
  })

  it('is an absolute https URL, as an OAuth issuer must be', () => {
    for (const bad of [
      'api.example.com',
      'http://api.example.com',
      'https://api.example.com/?a=1',
      'https://u:p@api.example.com',
      'https://api.example.com/#x',
    ]) {
      expect(() => deploymentPublicBaseUrl({ PUBLIC_BASE_URL: bad }, {}), bad).toThrow(/absolute https URL/)
    }
  })

  it('the repository does not commit one: a deployment names its own', () => {
    const gateway = readFileSync(path.join(ROOT, 'wrangler.toml'), 'utf8')
    expect(gateway).not.toMatch(/^PUBLIC_BASE_URL\s*=/m)
  })
})
