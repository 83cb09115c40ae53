/**
 * An OpenAI-compatible /audio/transcriptions server for the e2e stack
 * (test/fakes/speech-provider.ts), configured as the `local` speech-to-text provider with an API
 * key. Tests script it through `inject('stack').fakes.speech.controlUrl` (`/fail`, `/reset`,
 * `/transcript`, `/seconds`, `/requests`).
 */

import { startSpeechProviderFake } from '../../fakes/speech-provider.ts'
import type { FakeService } from '../stack.setup.ts'

const service: FakeService = {
  name: 'speech',
  async start() {
    const fake = await startSpeechProviderFake({ apiKey: `stt-test-${crypto.randomUUID()}` })
    return {
      env: { ...fake.env, STT_PROVIDERS: 'local', STT_TIMEOUT_MS: '3000' },
      provide: { controlUrl: fake.controlUrl, url: fake.url },
      stop: () => fake.close(),
    }
  },
}

export default service
