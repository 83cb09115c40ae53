/**
 * The OTLP collector fake (test/fakes/otlp-collector.ts) as a process of its own for
 * bench/telemetry.ts, with recording off; prints its URL on stdout.
 */
import { startOtlpCollectorFake } from '../test/fakes/otlp-collector.ts'

const fake = await startOtlpCollectorFake({ record: false })
console.log(fake.url)
