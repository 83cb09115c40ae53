/**
 * The order `npm run deploy` uploads the workers in, read from their wrangler configs: a worker
 * goes after every worker it binds (a Durable Object class by `script_name`, a service by
 * `service`), because Cloudflare refuses an upload whose binding names a script that does not
 * exist yet. The bindings form two cycles today: svc-auth appends to the AuditLog hosted by
 * svc-platform, which calls svc-auth to sign the attestation; and svc-console calls the API through
 * svc-gateway, which is uploaded last and routes to svc-console. On a fresh account (`--bootstrap`)
 * a cycle is broken by uploading one of its workers first without the bindings whose targets are
 * missing, and uploading it again, whole, once they exist (a worker binding the gateway: right
 * after the gateway). On an account where every script exists, the same order is used with no
 * partial uploads.
 */
import { readFileSync } from 'node:fs'

export interface WorkerBindings {
  name: string
  /** The other workers it binds, by binding name. */
  targets: { binding: string; script: string }[]
}

export interface DeployStep {
  name: string
  /** Bindings left out of this upload because their target is not deployed yet (bootstrap only). */
  omit: string[]
}

/** The cross-worker bindings in one wrangler.toml (array-of-tables `durable_objects.bindings` and `services`). */
export function readWorkerBindings(tomlText: string): WorkerBindings {
  const name = /^name\s*=\s*"([^"]+)"/m.exec(tomlText)?.[1]
  if (!name) throw new Error('wrangler config without a name')
  const targets: WorkerBindings['targets'] = []
  for (const block of tableBlocks(tomlText)) {
    if (block.header !== 'durable_objects.bindings' && block.header !== 'services') continue
    const binding = /^(?:binding|name)\s*=\s*"([^"]+)"/m.exec(block.body)?.[1]
    const script = /^(?:script_name|service)\s*=\s*"([^"]+)"/m.exec(block.body)?.[1]
    if (binding && script && script !== name) targets.push({ binding, script })
  }
  return { name, targets }
}

/** `[[header]]` array-of-tables blocks: from the header line to the next table header. */
export function tableBlocks(
  tomlText: string,
): { header: string; start: number; end: number; body: string }[] {
  const lines = tomlText.split('\n')
  const blocks: { header: string; start: number; end: number; body: string }[] = []
  for (let i = 0; i < lines.length; i++) {
    const header = /^\[\[([\w.]+)\]\]\s*$/.exec(lines[i]!)?.[1]
    if (!header) continue
    let end = i + 1
    while (end < lines.length && !/^\[/.test(lines[end]!)) end++
    blocks.push({ header, start: i, end, body: lines.slice(i + 1, end).join('\n') })
  }
  return blocks
}

/** The config without the named `durable_objects.bindings` / `services` entries. */
export function withoutBindings(tomlText: string, omit: readonly string[]): string {
  const lines = tomlText.split('\n')
  const drop = new Set<number>()
  for (const block of tableBlocks(tomlText)) {
    if (block.header !== 'durable_objects.bindings' && block.header !== 'services') continue
    const binding = /^(?:binding|name)\s*=\s*"([^"]+)"/m.exec(block.body)?.[1]
    if (binding && omit.includes(binding)) for (let i = block.start; i < block.end; i++) drop.add(i)
  }
  return lines.filter((_, i) => !drop.has(i)).join('\n')
}

/**
 * The uploads, in order. `last` goes at the very end (the gateway: the public entry point changes
 * only when everything behind it is in place). With `bootstrap`, a cycle is broken at the worker
 * with the fewest missing targets (then by name) and that worker is uploaded again at the end of
 * the cycle's part of the order; without it every target is assumed to exist already.
 */
export function planDeploy(
  workers: readonly WorkerBindings[],
  { bootstrap = false, last = '' } = {},
): DeployStep[] {
  const known = new Set(workers.map((w) => w.name))
  for (const w of workers)
    for (const t of w.targets)
      if (!known.has(t.script))
        throw new Error(`${w.name} binds ${t.binding} to ${t.script}, which is not a worker here`)
  const deployed = new Set<string>()
  const steps: DeployStep[] = []
  const partial = new Set<string>()
  const pending = workers.filter((w) => w.name !== last).sort((a, b) => a.name.localeCompare(b.name))
  // The gateway comes last whatever binds it: a binding to it never holds a worker back.
  const missing = (w: WorkerBindings) => w.targets.filter((t) => t.script !== last && !deployed.has(t.script))
  const bindsLast = (w: WorkerBindings) => w.targets.filter((t) => t.script === last).map((t) => t.binding)
  while (pending.length > 0) {
    let index = pending.findIndex((w) => missing(w).length === 0)
    let omit: string[] = []
    if (index < 0) {
      // A cycle: every remaining worker waits on another one.
      index = pending.reduce(
        (best, w, i) => (missing(w).length < missing(pending[best]!).length ? i : best),
        0,
      )
      omit = missing(pending[index]!).map((t) => t.binding)
      if (bootstrap) partial.add(pending[index]!.name)
      else omit = []
    }
    const [worker] = pending.splice(index, 1)
    if (bootstrap && bindsLast(worker!).length > 0) {
      omit = [...omit, ...bindsLast(worker!)]
      partial.add(worker!.name)
    }
    steps.push({ name: worker!.name, omit })
    deployed.add(worker!.name)
    // Upload a partial worker again, whole, as soon as all of its targets exist.
    for (const name of [...partial]) {
      const w = workers.find((x) => x.name === name)!
      if (missing(w).length === 0 && bindsLast(w).length === 0) {
        steps.push({ name, omit: [] })
        partial.delete(name)
      }
    }
  }
  const gateway = workers.find((w) => w.name === last)
  if (gateway) steps.push({ name: gateway.name, omit: [] })
  // Workers that bind the gateway, uploaded without that binding above: whole, now that it exists.
  for (const name of partial) steps.push({ name, omit: [] })
  return steps
}

export function readConfigBindings(configPath: string): WorkerBindings {
  return readWorkerBindings(readFileSync(configPath, 'utf8'))
}

/**
 * The gateway's PUBLIC_BASE_URL for a deployment: from the environment of `npm run deploy` (given
 * to the gateway as a var, over wrangler.toml's) or the gateway's `[vars]`. Required: without it
 * the gateway would take its public origin (the OAuth issuer, the MCP protected resource) from the
 * Host header, so it answers only loopback names and a deployment would answer everyone 421. An
 * absolute https URL, as OAuth requires of an issuer.
 */
export function deploymentPublicBaseUrl(
  environment: Readonly<Record<string, string | undefined>>,
  gatewayVars: Readonly<Record<string, unknown>>,
): { url: string; from: 'environment' | 'wrangler.toml' } {
  const fromEnvironment = environment.PUBLIC_BASE_URL?.trim()
  const fromConfig = gatewayVars.PUBLIC_BASE_URL
  const [value, from] = fromEnvironment
    ? [fromEnvironment, 'environment' as const]
    : [typeof fromConfig === 'string' ? fromConfig.trim() : '', 'wrangler.toml' as const]
  if (!value) {
    throw new Error(
      'PUBLIC_BASE_URL is not set. It is the URL clients reach the gateway at: the OAuth issuer, the MCP protected resource and the base of links. Without it the gateway answers only loopback Host names (421 to every other), so nothing would reach this deployment. Set it in the environment (PUBLIC_BASE_URL=https://api.example.com npm run deploy) or under [vars] in wrangler.toml.',
    )
  }
  const url = URL.canParse(value) ? new URL(value) : null
  const plain = url !== null && !url.search && !url.hash && !url.username && !url.password
  if (!plain || url.protocol !== 'https:') {
    throw new Error(
      `PUBLIC_BASE_URL (from the ${from}) must be an absolute https URL without query, fragment or credentials, e.g. https://api.example.com (got ${value}).`,
    )
  }
  return { url: value.replace(/\/+$/, ''), from }
}
