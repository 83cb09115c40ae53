import { FamilyEntrypoint } from '../../../shared/worker/family-entrypoint'
import { mcpApp } from './mcp.app'
import type { McpEnv } from './mcp.context'

export default class McpWorker extends FamilyEntrypoint<McpEnv> {
  protected readonly app = mcpApp
}
