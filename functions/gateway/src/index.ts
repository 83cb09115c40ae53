import { gatewayApp } from './gateway.app'

export default {
  fetch: gatewayApp.fetch,
} satisfies ExportedHandler<import('./gateway.context').GatewayEnv>
