import { handleGatewayRequest } from './gateway.app'
import type { GatewayEnv } from './gateway.context'

export default {
  fetch: handleGatewayRequest,
} satisfies ExportedHandler<GatewayEnv>
