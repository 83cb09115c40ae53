/**
 * Brave, Tavily and SearXNG for the e2e stack (test/fakes/search-providers.ts): the code worker
 * gets all three (SEARCH_PROVIDERS order brave, tavily, searxng). Tests script failures through
 * `inject('stack').fakes.search.controlUrl` (`/fail`, `/reset`, `/requests`).
 */

import { startSearchProvidersFake } from '../../fakes/search-providers.ts'
import type { FakeService } from '../stack.setup.ts'

const service: FakeService = {
  name: 'search',
  async start() {
    const fake = await startSearchProvidersFake()
    return {
      env: { ...fake.env, SEARCH_PROVIDERS: 'brave,tavily,searxng', SEARCH_TIMEOUT_MS: '1500' },
      provide: { controlUrl: fake.controlUrl, url: fake.url },
      stop: () => fake.close(),
    }
  },
}

export default service
