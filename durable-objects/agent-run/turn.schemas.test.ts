import { describe, expect, it } from 'vitest'
import { canonicalJson } from '../../shared/crypto/digests'
import { AppError } from '../../shared/http/errors'
import {
  assertAnswersPending,
  assertSameTurnBody,
  assertThinkingSupported,
  parseTurnRequest,
  type TurnRequest,
  turnBodyHash,
} from './turn.schemas'

const tool = (overrides: Record<string, unknown> = {}) => ({
  name: 'read_file',
  description: 'Reads a file from the workspace',
  input_schema: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
  tags: ['read-only'],
  ...overrides,
})

const valid = () => ({
  protocol: 'svc.code.v1',
  session_id: 'sess_1',
  run_id: '0b6f3c52-8f0e-4d3e-9a55-2f1f0c7f8e11',
  turn_id: 'turn_1',
  model: 'svc-comb',
  mode: 'edit',
  request: 'Add a README',
  workspace: { root: '/repo', files: ['a.ts'] },
  transcript: [],
  capabilities: { file_delta: true },
})

function rejection(body: unknown): AppError {
  try {
    parseTurnRequest(body)
  } catch (err) {
    if (err instanceof AppError) return err
    throw err
  }
  throw new Error('expected the request to be rejected')
}

describe('parseTurnRequest', () => {
  it('accepts the minimal spec request and applies defaults', () => {
    const req = parseTurnRequest(valid())
    expect(req.enable_thinking).toBe(false)
    expect(req.client_tools).toBeUndefined()
    expect(req.workspace).toEqual({ root: '/repo', files: ['a.ts'] })
  })

  it('accepts every optional field at its limit', () => {
    const req = parseTurnRequest({
      ...valid(),
      effort: 'ultracode',
      enable_thinking: true,
      cursor: 0,
      client_tools: Array.from({ length: 64 }, (_, i) =>
        tool({
          name: `t${i}`.padEnd(200, 'x'),
          description: 'd'.repeat(1000),
          tags: Array.from({ length: 16 }, () => 'g'.repeat(100)),
        }),
      ),
      approvals: [{ approval_id: 'ap_1', decision: 'approve' }],
      tool_results: [{ call_id: 'call_1', output: 'ok' }],
    })
    expect(req.client_tools).toHaveLength(64)
    expect(req.tool_results?.[0]?.is_error).toBe(false)
  })

  it.each([
    ['protocol', { protocol: 'svc.code.v2' }, 'protocol', 'protocol must be "svc.code.v1"'],
    ['missing session_id', { session_id: undefined }, 'session_id', 'session_id is required'],
    ['run_id not a uuid', { run_id: 'run-1' }, 'run_id', 'run_id must be a valid UUID'],
    ['model not an alias', { model: 'gpt-4o' }, 'model', 'model must be one of "svc-cell"'],
    ['mode', { mode: 'yolo' }, 'mode', 'mode must be one of "manual", "plan", "edit", "auto"'],
    ['effort', { effort: 'extreme' }, 'effort', 'effort must be one of "low"'],
    [
      'enable_thinking type',
      { enable_thinking: 'yes' },
      'enable_thinking',
      'enable_thinking must be a boolean',
    ],
    ['request missing', { request: undefined }, 'request', 'request is required'],
    ['cursor negative', { cursor: -1 }, 'cursor', 'cursor must be >= 0 (got -1)'],
    ['cursor fractional', { cursor: 1.5 }, 'cursor', 'cursor must be an integer'],
    ['workspace array', { workspace: [] }, 'workspace', 'workspace must be a JSON object'],
    ['transcript object', { transcript: {} }, 'transcript', 'transcript must be an array'],
    ['capabilities missing', { capabilities: undefined }, 'capabilities', 'capabilities is required'],
  ])('rejects %s with the field path and rule', (_name, patch, param, message) => {
    const err = rejection({ ...valid(), ...patch })
    expect(err.status).toBe(400)
    expect(err.code).toBe('invalid_turn_request')
    expect(err.param).toBe(param)
    expect(err.message).toContain(message)
  })

  it('rejects a non-object body', () => {
    expect(rejection([]).message).toContain('must be a JSON object')
    expect(rejection('x').status).toBe(400)
  })

  it.each([
    [
      '65 tools',
      { client_tools: Array.from({ length: 65 }, (_, i) => tool({ name: `t${i}` })) },
      'client_tools',
      'at most 64 items',
    ],
    [
      'name 201 chars',
      { client_tools: [tool({ name: 'n'.repeat(201) })] },
      'client_tools[0].name',
      'at most 200 characters',
    ],
    ['empty name', { client_tools: [tool({ name: '' })] }, 'client_tools[0].name', 'non-empty'],
    [
      'description 1001 chars',
      { client_tools: [tool({ description: 'd'.repeat(1001) })] },
      'client_tools[0].description',
      'at most 1000 characters',
    ],
    [
      '17 tags',
      { client_tools: [tool({ tags: Array.from({ length: 17 }, () => 'x') })] },
      'client_tools[0].tags',
      'at most 16',
    ],
    [
      'tag 101 chars',
      { client_tools: [tool({ tags: ['t'.repeat(101)] })] },
      'client_tools[0].tags[0]',
      'at most 100 characters',
    ],
    ['missing tags', { client_tools: [tool({ tags: undefined })] }, 'client_tools[0].tags', 'is required'],
    [
      'missing description',
      { client_tools: [tool({ description: undefined })] },
      'client_tools[0].description',
      'is required',
    ],
    [
      'missing input_schema',
      { client_tools: [tool({ input_schema: undefined })] },
      'client_tools[0].input_schema',
      'is required',
    ],
    [
      'input_schema array',
      { client_tools: [tool({ input_schema: [] })] },
      'client_tools[0].input_schema',
      'JSON object',
    ],
    [
      'input_schema with a bad type',
      { client_tools: [tool({ input_schema: { type: 'object', properties: { a: { type: 'str' } } } })] },
      'client_tools[0].input_schema',
      '/properties/a/type',
    ],
    [
      'input_schema with a dangling $ref',
      {
        client_tools: [
          tool({ input_schema: { type: 'object', properties: { a: { $ref: '#/$defs/nope' } } } }),
        ],
      },
      'client_tools[0].input_schema',
      'does not resolve',
    ],
    [
      'duplicate tool names',
      { client_tools: [tool(), tool()] },
      'client_tools[1].name',
      'client_tools[1].name is used twice (also at index 0); each client tool name must be unique (got "read_file")',
    ],
    [
      'reserved server tool name',
      { client_tools: [tool({ name: 'web_search' })] },
      'client_tools[0].name',
      'reserved',
    ],
  ])('client_tools: rejects %s', (_name, patch, param, message) => {
    const err = rejection({ ...valid(), ...patch })
    expect(err.param).toBe(param)
    expect(err.message).toContain(message)
  })

  it.each([
    ['approval decision', { approvals: [{ approval_id: 'a', decision: 'maybe' }] }, 'approvals[0].decision'],
    [
      'approval unknown field',
      { approvals: [{ approval_id: 'a', decision: 'deny', note: 'x' }] },
      'approvals[0]',
    ],
    [
      'duplicate approval',
      {
        approvals: [
          { approval_id: 'a', decision: 'deny' },
          { approval_id: 'a', decision: 'approve' },
        ],
      },
      'approvals[1].approval_id',
    ],
    ['tool result without output', { tool_results: [{ call_id: 'c' }] }, 'tool_results[0].output'],
    ['tool result output number', { tool_results: [{ call_id: 'c', output: 3 }] }, 'tool_results[0].output'],
  ])('continuation fields: rejects %s', (_name, patch, param) => {
    expect(rejection({ ...valid(), ...patch }).param).toBe(param)
  })

  it('mentions further problems after the first one', () => {
    const err = rejection({ ...valid(), mode: 'x', model: 'y', cursor: -3, session_id: 5 })
    expect(err.message.split(';').length).toBeGreaterThanOrEqual(3)
    expect(err.message).toContain('more')
  })
})

describe('assertThinkingSupported', () => {
  const thinks = (alias: string) => alias === 'svc-hive' || alias === 'svc-swarm'

  it('lets a thinking model or a disabled flag through', () => {
    expect(() => assertThinkingSupported('svc-hive', true, thinks)).not.toThrow()
    expect(() => assertThinkingSupported('svc-cell', false, thinks)).not.toThrow()
  })

  it('rejects thinking on a model without it and names the models that have it', () => {
    try {
      assertThinkingSupported('svc-cell', true, thinks)
      expect.unreachable()
    } catch (err) {
      expect(err).toBeInstanceOf(AppError)
      const e = err as AppError
      expect(e.status).toBe(400)
      expect(e.param).toBe('enable_thinking')
      expect(e.message).toContain('svc-cell does not support thinking mode')
      expect(e.message).toContain('svc-hive, svc-swarm')
    }
  })
})

describe('turn body hash and reattach', () => {
  it('hashes the same turn the same way regardless of key order, defaults and cursor', async () => {
    const a = parseTurnRequest(valid())
    const reordered = Object.fromEntries(Object.entries(valid()).reverse())
    const b = parseTurnRequest({ ...reordered, enable_thinking: false, cursor: 17 })
    expect(await turnBodyHash(a)).toBe(await turnBodyHash(b))
    expect(await turnBodyHash(a)).toMatch(/^sha256:[0-9a-f]{64}$/)
  })

  it('a first post without run_id and a reattach with the assigned run_id hash the same', async () => {
    const { run_id, ...first } = valid()
    const original = await turnBodyHash(parseTurnRequest(first), run_id)
    expect(await turnBodyHash(parseTurnRequest({ ...first, run_id, cursor: 3 }))).toBe(original)
    expect(await turnBodyHash(parseTurnRequest(first))).not.toBe(original)
  })

  it('a different body hashes differently and is a 409 on reattach', async () => {
    const a = await turnBodyHash(parseTurnRequest(valid()))
    const b = await turnBodyHash(parseTurnRequest({ ...valid(), request: 'Add a LICENSE' }))
    expect(a).not.toBe(b)
    expect(() => assertSameTurnBody(a, a, 'turn_1')).not.toThrow()
    try {
      assertSameTurnBody(a, b, 'turn_1')
      expect.unreachable()
    } catch (err) {
      expect((err as AppError).status).toBe(409)
      expect((err as AppError).code).toBe('turn_id_reused')
    }
  })

  it('matches a known SHA-256 (WebCrypto) of the canonical form', async () => {
    const req: TurnRequest = parseTurnRequest(valid())
    const { cursor: _c, ...rest } = req
    const digest = await crypto.subtle.digest('SHA-256', new TextEncoder().encode(canonicalJson(rest)))
    const hex = [...new Uint8Array(digest)].map((x) => x.toString(16).padStart(2, '0')).join('')
    expect(await turnBodyHash(req)).toBe(`sha256:${hex}`)
  })
})

describe('assertAnswersPending', () => {
  const pending = { approvals: ['ap_1'], toolCalls: ['call_9'] }

  it('accepts a turn answering everything pending', () => {
    expect(() =>
      assertAnswersPending(pending, {
        approvals: [{ approval_id: 'ap_1', decision: 'deny' }],
        tool_results: [{ call_id: 'call_9', output: 'done', is_error: false }],
      }),
    ).not.toThrow()
  })

  it('names missing and unknown ids', () => {
    const code = (f: () => void) => {
      try {
        f()
      } catch (err) {
        return `${(err as AppError).code}:${(err as AppError).message}`
      }
      return 'none'
    }
    expect(
      code(() =>
        assertAnswersPending(pending, {
          tool_results: [{ call_id: 'call_9', output: 'x', is_error: false }],
        }),
      ),
    ).toMatch(/^approval_answer_required:.*ap_1/)
    expect(
      code(() =>
        assertAnswersPending(pending, { approvals: [{ approval_id: 'ap_1', decision: 'approve' }] }),
      ),
    ).toMatch(/^tool_result_required:.*call_9/)
    expect(
      code(() =>
        assertAnswersPending(pending, { approvals: [{ approval_id: 'ap_2', decision: 'approve' }] }),
      ),
    ).toMatch(/^unknown_approval:.*ap_2.*pending: ap_1/)
    expect(code(() => assertAnswersPending({ approvals: [], toolCalls: [] }, {}))).toBe('none')
  })
})

describe('tool_results[].file_changes', () => {
  const H = `sha256:${'a'.repeat(64)}`
  const withChanges = (changes: unknown[]) => ({
    ...valid(),
    tool_results: [{ call_id: 'call_1', output: 'ok', file_changes: changes }],
  })

  it('accepts the changes a client reports for an edit it ran', () => {
    const req = parseTurnRequest(
      withChanges([
        { path: 'a.ts', op: 'create', diff: '+x\n', base_hash: null, new_hash: H },
        { path: 'b.ts', from_path: 'c.ts', op: 'rename', diff: '', base_hash: H, new_hash: H },
      ]),
    )
    expect(req.tool_results?.[0]?.file_changes).toHaveLength(2)
  })

  it.each([
    [
      { path: 'a.ts', op: 'create', diff: '', base_hash: H, new_hash: H },
      'tool_results[0].file_changes[0].base_hash',
    ],
    [
      { path: 'a.ts', op: 'delete', diff: '', base_hash: H, new_hash: H },
      'tool_results[0].file_changes[0].new_hash',
    ],
    [
      { path: 'a.ts', op: 'modify', diff: '', base_hash: 'md5:1', new_hash: H },
      'tool_results[0].file_changes[0].base_hash',
    ],
    [
      { path: 'a.ts', op: 'rename', diff: '', base_hash: H, new_hash: H },
      'tool_results[0].file_changes[0].from_path',
    ],
  ])('refuses %j at %s', (change, param) => {
    expect(rejection(withChanges([change])).param).toBe(param)
  })
})

describe('assertAnswersPending with optional answers', () => {
  it('accepts but does not require answers the mode settles or results of calls approved now', () => {
    const pending = {
      approvals: [],
      toolCalls: [],
      optionalApprovals: ['ap_1'],
      optionalToolCalls: ['call_1'],
    }
    expect(() => assertAnswersPending(pending, {})).not.toThrow()
    expect(() =>
      assertAnswersPending(pending, {
        approvals: [{ approval_id: 'ap_1', decision: 'approve' }],
        tool_results: [{ call_id: 'call_1', output: 'ran', is_error: false }],
      }),
    ).not.toThrow()
    expect(() =>
      assertAnswersPending(pending, { tool_results: [{ call_id: 'call_2', output: 'x', is_error: false }] }),
    ).toThrow(/call_2.*pending: call_1/)
  })
})
