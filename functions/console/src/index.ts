import { FamilyEntrypoint } from '../../../shared/worker/family-entrypoint'
import { consoleApp } from './console.app'
import type { ConsoleEnv } from './console.context'
import { docsOpenApiPart } from './docs-reference'

export default class ConsoleWorker extends FamilyEntrypoint<ConsoleEnv> {
  protected readonly app = { fetch: consoleApp.fetch, getOpenAPI31Document: docsOpenApiPart }
}
