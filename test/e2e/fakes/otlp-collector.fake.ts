/**
 * The OpenTelemetry Collector the telemetry worker forwards to (test/fakes/otlp-collector.ts),
 * with its own credential (OTLP_COLLECTOR_AUTHORIZATION) and a short timeout so a hang is seen
 * quickly. Tests script faults and read what it received through
 * `inject('stack').fakes['otlp-collector'].controlUrl` (`/script`, `/requests?match=<tag>`),
 * tagging their requests with `x-request-id: <tag>…`.
 */
import { startOtlpCollectorFake } from '../../fakes/otlp-collector.ts'
import type { FakeService } from '../stack.setup.ts'

const service: FakeService = {
  name: 'otlp-collector',
  async start() {
    const authorization = `Bearer collector-${crypto.randomUUID()}`
    const fake = await startOtlpCollectorFake({ authorization })
    return {
      env: {
        OTLP_COLLECTOR_URL: fake.url,
        OTLP_COLLECTOR_AUTHORIZATION: authorization,
        OTLP_COLLECTOR_TIMEOUT_MS: '1500',
        OTLP_DEPLOYMENT_ENVIRONMENT: 'e2e',
        OTLP_CLOUD_REGION: 'local-e2e',
      },
      provide: { controlUrl: fake.controlUrl, url: fake.url },
      stop: () => fake.close(),
    }
  },
}

export default service
