import { FamilyEntrypoint } from '../../../shared/worker/family-entrypoint'
import { codeApp } from './code.app'
import type { CodeEnv } from './code.context'

export { AgentRun } from '../../../durable-objects/agent-run/agent-run.do'

export default class CodeWorker extends FamilyEntrypoint<CodeEnv> {
  protected readonly app = codeApp
}
