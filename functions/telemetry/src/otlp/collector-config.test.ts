/**
 * The shipped collector configuration (deploy/otel-collector.yaml) against the receiver: the
 * headers the receiver sends become the spec's resource attributes there. The resource
 * processor's actions are applied as the Collector applies them (attraction: insert / upsert,
 * `from_context: metadata.<header>`, header names case-insensitive) to the headers
 * collectorHeaders() builds and a resource that claims another tenant.
 */
import { describe, expect, it } from 'vitest'
import { parse } from 'yaml'
import configText from '../../../../deploy/otel-collector.yaml?raw'
import { TelemetrySettingsSchema, telemetrySettings } from '../telemetry.context'
import { collectorHeaders, TENANT_HEADERS } from './collector'

interface Action {
  key: string
  action: string
  from_context?: string
  value?: unknown
}

const config = parse(configText) as {
  receivers: { otlp: { protocols: { http: { include_metadata: boolean; max_request_body_size: number } } } }
  processors: Record<string, { attributes?: Action[]; metadata_keys?: string[] }>
  extensions: { headers_setter: { headers: { key: string; from_context: string }[] } }
  service: { pipelines: Record<string, { processors: string[]; receivers: string[] }> }
}

/** The Collector's resource processor on one resource, with the request's headers as client metadata. */
function applyResourceProcessor(
  actions: Action[],
  metadata: Record<string, string>,
  attrs: Record<string, string>,
) {
  const lower = Object.fromEntries(Object.entries(metadata).map(([k, v]) => [k.toLowerCase(), v]))
  const out = { ...attrs }
  for (const a of actions) {
    const source = a.from_context?.startsWith('metadata.')
      ? lower[a.from_context.slice('metadata.'.length).toLowerCase()]
      : (a.value as string | undefined)
    if (source === undefined) continue
    if (a.action === 'upsert' || (a.action === 'insert' && !(a.key in out))) out[a.key] = source
  }
  return out
}

describe('deploy/otel-collector.yaml', () => {
  const settings = TelemetrySettingsSchema.parse({
    OTLP_COLLECTOR_URL: 'http://collector:4318',
    OTLP_DEPLOYMENT_ENVIRONMENT: 'production',
    OTLP_CLOUD_REGION: 'eu-west',
  })
  const headers = collectorHeaders(settings, {
    signal: 'traces',
    body: new Uint8Array(0),
    contentType: 'application/x-protobuf',
    contentEncoding: 'identity',
    tenantId: 'tenant-a',
    requestId: 'req_1',
  })

  it("turns the receiver's headers into svc.tenant_id, cloud.region and deployment.environment", () => {
    const actions = config.processors['resource/svc']!.attributes!
    const emitter = {
      'service.name': 'checkout',
      'service.version': '2.0.1',
      'deployment.environment': 'staging',
      'svc.tenant_id': 'tenant-b',
    }
    expect(applyResourceProcessor(actions, headers, emitter)).toEqual({
      'service.name': 'checkout',
      'service.version': '2.0.1',
      // the emitter's own environment stays; the tenant it claimed does not
      'deployment.environment': 'staging',
      'svc.tenant_id': 'tenant-a',
      'cloud.region': 'eu-west',
    })
    expect(applyResourceProcessor(actions, headers, { 'service.name': 'x' })['deployment.environment']).toBe(
      'production',
    )
  })

  it('reads every header it maps from what the receiver sends', () => {
    const sent = new Set(Object.keys(headers).map((h) => h.toLowerCase()))
    for (const a of config.processors['resource/svc']!.attributes!) {
      expect(sent.has(a.from_context!.replace(/^metadata\./, ''))).toBe(true)
    }
    expect(config.extensions.headers_setter.headers).toEqual([
      { key: TENANT_HEADERS.orgId, from_context: TENANT_HEADERS.orgId.toLowerCase() },
    ])
    expect(config.processors.batch!.metadata_keys).toEqual([TENANT_HEADERS.orgId.toLowerCase()])
  })

  it('keeps client metadata, admits what the receiver admits, and maps every signal', () => {
    const http = config.receivers.otlp.protocols.http
    expect(http.include_metadata).toBe(true)
    expect(http.max_request_body_size).toBeGreaterThanOrEqual(8 * 1024 * 1024)
    for (const signal of ['traces', 'metrics', 'logs']) {
      const processors = config.service.pipelines[signal]!.processors
      expect(processors).toContain('resource/svc')
      // before batch, which keeps only metadata_keys
      expect(processors.indexOf('resource/svc')).toBeLessThan(processors.indexOf('batch'))
    }
    expect(configText).not.toMatch(/Bearer [A-Za-z0-9]/)
  })
})

describe('telemetry settings (the worker env reader)', () => {
  it('a wrong value is 503 service_misconfigured naming it; a value changed on the same env is read again', () => {
    const env: Record<string, string> = {
      OTLP_COLLECTOR_URL: 'http://collector:4318/',
      OTLP_COLLECTOR_TIMEOUT_MS: 'soon',
    }
    expect(() => telemetrySettings(env)).toThrow(
      expect.objectContaining({
        status: 503,
        code: 'service_misconfigured',
        message: expect.stringContaining('OTLP_COLLECTOR_TIMEOUT_MS'),
      }),
    )
    env.OTLP_COLLECTOR_TIMEOUT_MS = '2500'
    expect(telemetrySettings(env)).toMatchObject({
      OTLP_COLLECTOR_URL: 'http://collector:4318',
      OTLP_COLLECTOR_TIMEOUT_MS: 2500,
      OTLP_RESULTS_RETAINED: 1000,
      OTLP_DEPLOYMENT_ENVIRONMENT: 'development',
    })
  })
})
