import { describe, expect, it } from 'vitest'
import {
  APPROVAL_TTL_MS,
  approvalExpiresAt,
  classifyTags,
  clientToolExecutor,
  decideApproval,
  isServerTool,
  type PolicyTool,
} from './approval-policy'
import type { AgentMode } from './turn.schemas'

const client = (tags: string[], name = 'tool'): PolicyTool => ({ executor: 'client', tool: { name, tags } })

describe('classifyTags', () => {
  it.each([
    [['read-only'], 'read_only'],
    [['READ_ONLY'], 'read_only'],
    [['Read Only'], 'read_only'],
    [['network'], 'network'],
    [['edit'], 'edit'],
    [['write'], 'edit'],
    [['shell'], 'execute'],
    [['destructive'], 'destructive'],
    [['dangerous'], 'destructive'],
    [['read-only', 'edit'], 'edit'],
    [['read-only', 'network'], 'network'],
    [['edit', 'destructive', 'read-only'], 'destructive'],
    [['filesystem', 'git'], 'unclassified'],
    [[], 'unclassified'],
  ])('%j -> %s', (tags, effect) => {
    expect(classifyTags(tags)).toBe(effect)
  })
})

describe('decideApproval: the mode matrix', () => {
  const cases: Array<[AgentMode, PolicyTool, string]> = [
    // manual: everything asks, even read-only server tools
    ['manual', { executor: 'server', name: 'web_search' }, 'require_approval'],
    ['manual', client(['read-only']), 'require_approval'],
    ['manual', client(['destructive']), 'require_approval'],
    // plan: read-only runs, network asks, writes are refused
    ['plan', { executor: 'server', name: 'web_search' }, 'auto_approve'],
    ['plan', client(['read-only']), 'auto_approve'],
    ['plan', client(['network']), 'require_approval'],
    ['plan', client(['edit']), 'refuse'],
    ['plan', client(['shell']), 'refuse'],
    ['plan', client([]), 'refuse'],
    ['plan', client(['destructive']), 'refuse'],
    // edit: reads run, everything else asks
    ['edit', { executor: 'server', name: 'web_search' }, 'auto_approve'],
    ['edit', client(['read-only']), 'auto_approve'],
    ['edit', client(['edit']), 'require_approval'],
    ['edit', client(['network']), 'require_approval'],
    ['edit', client([]), 'require_approval'],
    ['edit', client(['destructive']), 'require_approval'],
    // auto: everything runs except destructive
    ['auto', { executor: 'server', name: 'web_search' }, 'auto_approve'],
    ['auto', client(['edit']), 'auto_approve'],
    ['auto', client(['exec']), 'auto_approve'],
    ['auto', client([]), 'auto_approve'],
    ['auto', client(['read-only', 'destructive']), 'require_approval'],
    ['auto', { executor: 'mcp', tool: { name: 'drop_table', tags: ['dangerous'] } }, 'require_approval'],
  ]
  it.each(cases)('%s + %j -> %s', (mode, tool, decision) => {
    expect(decideApproval(mode, tool).decision).toBe(decision)
  })

  it('explains the decision with the tool name, its class and the mode rule', () => {
    const d = decideApproval('plan', client(['edit'], 'write_file'))
    expect(d).toMatchObject({ decision: 'refuse', effect: 'edit' })
    expect(d.reason).toContain('write_file')
    expect(d.reason).toContain('plan mode runs read-only tools only')
  })

  it('treats unknown server tools as unclassified', () => {
    expect(isServerTool('web_search')).toBe(true)
    expect(isServerTool('toString')).toBe(false)
    expect(decideApproval('edit', { executor: 'server', name: 'shell' }).effect).toBe('unclassified')
  })

  it('computes approval expiry from the TTL', () => {
    const now = new Date('2026-01-01T00:00:00.000Z')
    expect(approvalExpiresAt(now)).toBe(new Date(now.getTime() + APPROVAL_TTL_MS).toISOString())
    expect(approvalExpiresAt(now, 1000)).toBe('2026-01-01T00:00:01.000Z')
  })
})

describe('clientToolExecutor', () => {
  it('marks MCP-forwarded tools by tag or by the mcp__server__tool naming', () => {
    expect(clientToolExecutor({ name: 'read_file', tags: ['read-only'] })).toBe('client')
    expect(clientToolExecutor({ name: 'query', tags: ['MCP', 'read-only'] })).toBe('mcp')
    expect(clientToolExecutor({ name: 'mcp__github__create_issue', tags: [] })).toBe('mcp')
  })
})

describe('update_plan', () => {
  it.each(['manual', 'plan', 'edit', 'auto'] as const)(
    'runs without asking in %s mode: it only reports the plan',
    (mode) => {
      expect(isServerTool('update_plan')).toBe(true)
      expect(decideApproval(mode, { executor: 'server', name: 'update_plan' })).toMatchObject({
        decision: 'auto_approve',
        effect: 'none',
      })
    },
  )
})
