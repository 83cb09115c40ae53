/**
 * Test mode's built-in model. Requests made with a test key (`svc_sk_test_`) are answered here,
 * through the same provider pipeline as live requests, and nothing is billed. It answers
 * exactly like an OpenAI-compatible upstream (JSON, or SSE when `stream` is true), so
 * streaming, usage accounting, tool calls and token limits can be exercised end to end.
 *
 * Behaviour (documented for users in docs/providers.md):
 * - Deterministic: the reply is a pure function of the request (SHA-256 of its canonical JSON,
 *   ignoring `stream`, `stream_options`, `user` and `metadata`), so JSON and SSE give the same
 *   text. Change the messages or `seed` for a different reply. `id` and `created` are per call.
 * - Tool calls: when `tools` are offered, `tool_choice` is not "none", and either `tool_choice`
 *   is "required"/names a function, or the last message is a user message that mentions a
 *   tool's name, the word "call", or "use the tool"/"use a tool". The mentioned tool (else the
 *   first) is called with arguments generated from its JSON Schema; finish_reason "tool_calls".
 * - `response_format` json_object / json_schema: the content is JSON (an instance of the schema).
 * - `max_tokens` / `max_completion_tokens`: the reply is cut at that many tokens and
 *   finish_reason is "length". `reasoning_effort` adds simulated reasoning tokens (low 16,
 *   medium 64, high 256, xhigh 512, max 1024, ultracode 2048) that count toward the limit and
 *   are reported in completion_tokens_details.reasoning_tokens.
 * - `n` choices, each different. Usage is counted with the same tokenizer as live estimates.
 * - `logprobs: true`: each text choice carries OpenAI's `logprobs.content`, one entry per token of
 *   the reply (`token`, `logprob`, `bytes`, `top_logprobs`: the token itself when `top_logprobs`
 *   asks for any), with logprobs drawn from the same seeded generator (between -4 and 0, most
 *   near 0), so they differ between choices and seeds and never between two identical requests.
 *   JSON answers only; streamed chunks carry `logprobs: null`.
 */

import { canonicalJson, sha256Hex } from '../crypto/digests'
import {
  type ChatFunctionTool,
  contentText,
  type NormalizedUsage,
  type ProviderChatRequest,
  type ReasoningEffort,
  requestedMaxTokens,
  toWireUsage,
  usageFromCounts,
} from './chat-wire'
import { sseData } from './sse'
import { countPromptTokens, countTextTokens, splitByTokens, truncateToTokens } from './tokenizer'

export const SIMULATED_REASONING_TOKENS: Readonly<Record<ReasoningEffort, number>> = {
  low: 16,
  medium: 64,
  high: 256,
  xhigh: 512,
  max: 1024,
  ultracode: 2048,
}

const SENTENCES = [
  'This answer comes from the built-in test-mode model, so nothing is billed.',
  'The same request always produces this same reply.',
  'Streaming, tool calls, token limits and usage reporting behave as they do with a live key.',
  'Use a live key to get answers from a real model.',
  'Usage figures are counted with the same tokenizer the live service uses for estimates.',
  'Change the messages or the seed to get a different reply.',
  'Every chunk of a streamed reply carries the same id and created time.',
]

export type SimulatedFinishReason = 'stop' | 'length' | 'tool_calls'

export interface SimulatedChoice {
  readonly index: number
  readonly content: string | null
  readonly toolCall: { readonly id: string; readonly name: string; readonly arguments: string } | null
  readonly finishReason: SimulatedFinishReason
  readonly reasoningTokens: number
  readonly completionTokens: number
  /** Per-token logprobs of `content` when the request asked for them (`logprobs: true`). */
  readonly logprobs: readonly SimulatedTokenLogprob[] | null
}

export interface SimulatedTokenLogprob {
  readonly token: string
  readonly logprob: number
}

export interface SimulatedCompletion {
  /** Hex SHA-256 of the canonical request. */
  readonly fingerprint: string
  readonly choices: readonly SimulatedChoice[]
  readonly usage: NormalizedUsage
}

const IGNORED_FOR_FINGERPRINT = new Set(['stream', 'stream_options', 'user', 'metadata'])

export async function requestFingerprint(request: ProviderChatRequest): Promise<string> {
  const relevant = Object.fromEntries(
    Object.entries(request).filter(([key]) => !IGNORED_FOR_FINGERPRINT.has(key)),
  )
  return sha256Hex(canonicalJson(relevant))
}

/** mulberry32: a small deterministic PRNG seeded from the fingerprint. */
function seededRandom(fingerprint: string, salt: number): () => number {
  let state = (Number.parseInt(fingerprint.slice(0, 8), 16) ^ Math.imul(salt + 1, 0x9e3779b1)) >>> 0
  return () => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

function lastUserText(request: ProviderChatRequest): string {
  for (let i = request.messages.length - 1; i >= 0; i--) {
    const message = request.messages[i]
    if (message?.role === 'user') return contentText(message.content, ' ')
  }
  return ''
}

/** The tool test mode calls, or null. See the module comment for the trigger. */
export function chooseSimulatedTool(request: ProviderChatRequest): ChatFunctionTool | null {
  const tools = (request.tools ?? []).filter((tool) => tool.type === 'function')
  const choice = request.tool_choice
  if (tools.length === 0 || choice === 'none') return null
  if (choice !== undefined && typeof choice === 'object') {
    return tools.find((tool) => tool.function.name === choice.function.name) ?? null
  }
  const last = request.messages[request.messages.length - 1]
  const text = last?.role === 'user' ? contentText(last.content, ' ').toLowerCase() : ''
  const mentioned = text ? tools.find((tool) => text.includes(tool.function.name.toLowerCase())) : undefined
  if (mentioned) return mentioned
  if (choice === 'required') return tools[0] ?? null
  if (/\bcall\b/.test(text) || /\buse (the|a) tool\b/.test(text)) return tools[0] ?? null
  return null
}

type JsonSchema = Readonly<Record<string, unknown>>

/** A deterministic instance of a (simple) JSON Schema: objects, arrays, scalars, enum, const, anyOf/oneOf. */
export function instanceFromSchema(
  schema: unknown,
  random: () => number,
  name = 'value',
  depth = 0,
): unknown {
  if (schema === null || typeof schema !== 'object') return `test ${name}`
  const s = schema as JsonSchema
  if ('const' in s) return s.const
  if (Array.isArray(s.enum) && s.enum.length > 0) return s.enum[Math.floor(random() * s.enum.length)]
  for (const key of ['anyOf', 'oneOf', 'allOf'] as const) {
    const options = s[key]
    if (Array.isArray(options) && options.length > 0)
      return instanceFromSchema(options[0], random, name, depth)
  }
  const declared = Array.isArray(s.type) ? s.type.find((t) => t !== 'null') : s.type
  const type = declared ?? (s.properties ? 'object' : s.items ? 'array' : 'string')
  const bounded = (fallbackMin: number) => {
    const min = typeof s.minimum === 'number' ? s.minimum : fallbackMin
    const max = typeof s.maximum === 'number' ? s.maximum : min + 9
    return min + Math.floor(random() * (Math.max(min, max) - min + 1))
  }
  switch (type) {
    case 'object': {
      if (depth >= 4) return {}
      const properties = (s.properties ?? {}) as Record<string, unknown>
      return Object.fromEntries(
        Object.entries(properties).map(([key, sub]) => [
          key,
          instanceFromSchema(sub, random, key, depth + 1),
        ]),
      )
    }
    case 'array':
      return depth >= 4 ? [] : [instanceFromSchema(s.items, random, name, depth + 1)]
    case 'integer':
      return bounded(1)
    case 'number':
      return bounded(1) + 0.5
    case 'boolean':
      return random() < 0.5
    case 'null':
      return null
    default:
      if (s.format === 'date-time') return '2026-01-01T00:00:00Z'
      if (s.format === 'date') return '2026-01-01'
      if (s.format === 'email') return 'test@example.com'
      if (s.format === 'uri' || s.format === 'url') return 'https://example.com/'
      return `test ${name}`
  }
}

function replyText(request: ProviderChatRequest, alias: string, random: () => number): string {
  const format = request.response_format
  if (format?.type === 'json_schema') {
    return JSON.stringify(instanceFromSchema(format.json_schema.schema ?? { type: 'object' }, random))
  }
  const sentences = [...SENTENCES]
  const picked: string[] = []
  const count = 2 + Math.floor(random() * 3)
  for (let i = 0; i < count && sentences.length > 0; i++) {
    picked.push(sentences.splice(Math.floor(random() * sentences.length), 1)[0] ?? '')
  }
  if (format?.type === 'json_object')
    return JSON.stringify({ test_mode: true, model: alias, reply: picked.join(' ') })
  const words = lastUserText(request).trim().split(/\s+/).filter(Boolean)
  const excerpt = words.length > 12 ? `${words.slice(0, 12).join(' ')}…` : words.join(' ')
  const echo = excerpt ? ` You wrote: "${excerpt}".` : ''
  return `Test mode reply from ${alias}.${echo} ${picked.join(' ')}`
}

/** Everything the simulated model answers, before it is put on the wire. */
export async function planSimulatedCompletion(
  request: ProviderChatRequest,
  alias: string,
): Promise<SimulatedCompletion> {
  const fingerprint = await requestFingerprint(request)
  const limit = requestedMaxTokens(request)
  const effortTokens = request.reasoning_effort ? SIMULATED_REASONING_TOKENS[request.reasoning_effort] : 0
  const reasoningTokens = limit === null ? effortTokens : Math.min(effortTokens, limit)
  const budget = limit === null ? Number.POSITIVE_INFINITY : limit - reasoningTokens
  const tool = chooseSimulatedTool(request)
  const choices: SimulatedChoice[] = []
  for (let index = 0; index < Math.max(1, request.n ?? 1); index++) {
    const random = seededRandom(fingerprint, index)
    if (tool) {
      const args = JSON.stringify(instanceFromSchema(tool.function.parameters ?? { type: 'object' }, random))
      const full = countTextTokens(args)
      const cut = full > budget
      const text = cut ? truncateToTokens(args, budget) : args
      const suffix = index === 0 ? '' : `_${index}`
      choices.push({
        index,
        content: null,
        toolCall: {
          id: `call_${fingerprint.slice(8, 32)}${suffix}`,
          name: tool.function.name,
          arguments: text,
        },
        finishReason: cut ? 'length' : 'tool_calls',
        reasoningTokens,
        completionTokens: reasoningTokens + countTextTokens(text),
        logprobs: null,
      })
      continue
    }
    const reply = replyText(request, alias, random)
    const cut = countTextTokens(reply) > budget
    const content = cut ? truncateToTokens(reply, budget) : reply
    choices.push({
      index,
      content,
      toolCall: null,
      finishReason: cut ? 'length' : 'stop',
      reasoningTokens,
      completionTokens: reasoningTokens + countTextTokens(content),
      logprobs:
        request.logprobs === true ? tokenLogprobs(content, seededRandom(fingerprint, 1000 + index)) : null,
    })
  }
  const completionTokens = choices.reduce((sum, c) => sum + c.completionTokens, 0)
  const reasoning = choices.reduce((sum, c) => sum + c.reasoningTokens, 0)
  const usage = usageFromCounts(
    countPromptTokens(request.messages, request.tools),
    completionTokens,
    reasoning,
  )
  return { fingerprint, choices, usage }
}

/** One entry per token of `text`, logprobs skewed towards 0 (a confident model). */
function tokenLogprobs(text: string, random: () => number): SimulatedTokenLogprob[] {
  return splitByTokens(text, 1).map((token) => ({
    token,
    logprob: -Math.round(4 * random() ** 3 * 1e6) / 1e6,
  }))
}

const SYSTEM_FINGERPRINT = 'fp_svc_test_mode'
const utf8 = new TextEncoder()

function logprobsBody(choice: SimulatedChoice, topLogprobs: number): unknown {
  if (!choice.logprobs) return null
  return {
    content: choice.logprobs.map(({ token, logprob }) => {
      const bytes = [...utf8.encode(token)]
      return { token, logprob, bytes, top_logprobs: topLogprobs > 0 ? [{ token, logprob, bytes }] : [] }
    }),
    refusal: null,
  }
}

function completionBody(
  plan: SimulatedCompletion,
  alias: string,
  id: string,
  created: number,
  topLogprobs: number,
): unknown {
  return {
    id,
    object: 'chat.completion',
    created,
    model: alias,
    choices: plan.choices.map((choice) => ({
      index: choice.index,
      message: {
        role: 'assistant',
        content: choice.content,
        refusal: null,
        annotations: [],
        ...(choice.toolCall
          ? {
              tool_calls: [
                {
                  id: choice.toolCall.id,
                  type: 'function',
                  function: { name: choice.toolCall.name, arguments: choice.toolCall.arguments },
                },
              ],
            }
          : {}),
      },
      logprobs: logprobsBody(choice, topLogprobs),
      finish_reason: choice.finishReason,
    })),
    usage: toWireUsage(plan.usage),
    service_tier: 'default',
    system_fingerprint: SYSTEM_FINGERPRINT,
  }
}

/** The SSE events of a streamed reply, in OpenAI's order. */
export function simulatedStreamEvents(
  plan: SimulatedCompletion,
  alias: string,
  id: string,
  created: number,
  includeUsage: boolean,
): string[] {
  const usageField = includeUsage ? { usage: null } : {}
  const chunk = (index: number, delta: Record<string, unknown>, finishReason: string | null = null) =>
    sseData({
      id,
      object: 'chat.completion.chunk',
      created,
      model: alias,
      service_tier: 'default',
      system_fingerprint: SYSTEM_FINGERPRINT,
      choices: [{ index, delta, logprobs: null, finish_reason: finishReason }],
      ...usageField,
    })
  const events: string[] = []
  for (const choice of plan.choices) {
    if (choice.toolCall) {
      const call = choice.toolCall
      events.push(
        chunk(choice.index, {
          role: 'assistant',
          content: null,
          tool_calls: [
            { index: 0, id: call.id, type: 'function', function: { name: call.name, arguments: '' } },
          ],
          refusal: null,
        }),
      )
      for (const piece of splitByTokens(call.arguments, 3)) {
        events.push(chunk(choice.index, { tool_calls: [{ index: 0, function: { arguments: piece } }] }))
      }
    } else {
      events.push(chunk(choice.index, { role: 'assistant', content: '', refusal: null }))
      for (const piece of splitByTokens(choice.content ?? '', 4))
        events.push(chunk(choice.index, { content: piece }))
    }
    events.push(chunk(choice.index, {}, choice.finishReason))
  }
  if (includeUsage) {
    events.push(
      sseData({
        id,
        object: 'chat.completion.chunk',
        created,
        model: alias,
        service_tier: 'default',
        system_fingerprint: SYSTEM_FINGERPRINT,
        choices: [],
        usage: toWireUsage(plan.usage),
      }),
    )
  }
  events.push(sseData('[DONE]'))
  return events
}

/** The simulated model's HTTP answer, byte-for-byte what an OpenAI-compatible upstream sends. */
export async function simulateChatCompletion(
  request: ProviderChatRequest,
  options: { readonly alias: string; readonly now?: () => number },
): Promise<Response> {
  const plan = await planSimulatedCompletion(request, options.alias)
  const id = `chatcmpl-test${crypto.randomUUID().replaceAll('-', '').slice(0, 24)}`
  const created = Math.floor((options.now ?? Date.now)() / 1000)
  const headers = { 'x-request-id': `req_test_${plan.fingerprint.slice(0, 24)}` }
  if (!request.stream) {
    const topLogprobs = typeof request.top_logprobs === 'number' ? request.top_logprobs : 0
    return new Response(JSON.stringify(completionBody(plan, options.alias, id, created, topLogprobs)), {
      headers: { ...headers, 'content-type': 'application/json' },
    })
  }
  const events = simulatedStreamEvents(
    plan,
    options.alias,
    id,
    created,
    request.stream_options?.include_usage === true,
  )
  const encoder = new TextEncoder()
  let next = 0
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      const event = events[next++]
      if (event === undefined) controller.close()
      else controller.enqueue(encoder.encode(event))
    },
  })
  return new Response(body, { headers: { ...headers, 'content-type': 'text/event-stream; charset=utf-8' } })
}
