/**
 * Adapter for the Workers AI binding (`env.AI.run(model, inputs)`): it sends the chat request in
 * Workers AI's input shape and turns the answer into the OpenAI wire format (a JSON
 * chat.completion, or an SSE stream of chat.completion.chunk ending in `[DONE]`), so the rest of
 * the pipeline treats it like any OpenAI-compatible upstream.
 *
 * Workers AI answers either in its native shape (`{response, tool_calls, usage}`; streams of
 * `data: {"response": "..."}`) or, for newer models, already in OpenAI's shape (`choices`);
 * both are handled. Errors thrown by the binding are upstream failures (failover applies).
 */
import { z } from 'zod'
import { contentText, type ProviderChatRequest, requestedMaxTokens } from './chat-wire'
import { SseParser, sseData } from './sse'

export interface WorkersAiBinding {
  run(model: string, inputs: Record<string, unknown>, options?: Record<string, unknown>): Promise<unknown>
}

export function isWorkersAiBinding(value: unknown): value is WorkersAiBinding {
  return typeof value === 'object' && value !== null && typeof (value as { run?: unknown }).run === 'function'
}

const NativeResultSchema = z
  .object({
    response: z.union([z.string(), z.record(z.string(), z.unknown())]).nullish(),
    tool_calls: z.array(z.object({ name: z.string(), arguments: z.unknown() }).loose()).nullish(),
    usage: z.record(z.string(), z.unknown()).nullish(),
  })
  .loose()

const NativeChunkSchema = z
  .object({ response: z.string().nullish(), usage: z.record(z.string(), z.unknown()).nullish() })
  .loose()

/** The Workers AI input for a chat request (text-only content; OpenAI-style tools). */
export function workersAiInputs(request: ProviderChatRequest): Record<string, unknown> {
  const inputs: Record<string, unknown> = {
    messages: request.messages.map((m) => ({
      role: m.role,
      content: contentText(m.content),
      ...(m.tool_call_id ? { tool_call_id: m.tool_call_id } : {}),
      ...(m.tool_calls ? { tool_calls: m.tool_calls } : {}),
    })),
    stream: request.stream === true,
  }
  const maxTokens = requestedMaxTokens(request)
  if (maxTokens !== null) inputs.max_tokens = maxTokens
  for (const key of [
    'temperature',
    'top_p',
    'seed',
    'frequency_penalty',
    'presence_penalty',
    'response_format',
  ] as const) {
    if (request[key] !== undefined && request[key] !== null) inputs[key] = request[key]
  }
  if (request.tools && request.tools.length > 0 && request.tool_choice !== 'none')
    inputs.tools = request.tools
  return inputs
}

function newId(prefix: string): string {
  return `${prefix}${crypto.randomUUID().replaceAll('-', '').slice(0, 24)}`
}

/** Runs the model and answers like an OpenAI upstream would. */
export async function runWorkersAi(
  binding: WorkersAiBinding,
  model: string,
  request: ProviderChatRequest,
  now: () => number,
): Promise<Response> {
  const result = await binding.run(model, workersAiInputs(request))
  const created = Math.floor(now() / 1000)
  if (result instanceof ReadableStream) {
    return new Response(nativeStreamToOpenAi(result as ReadableStream<Uint8Array>, model, created), {
      headers: { 'content-type': 'text/event-stream' },
    })
  }
  if (result && typeof result === 'object' && Array.isArray((result as { choices?: unknown }).choices)) {
    return Response.json(result)
  }
  const native = NativeResultSchema.parse(result)
  const toolCalls = (native.tool_calls ?? []).map((call) => ({
    id: newId('call_'),
    type: 'function',
    function: {
      name: call.name,
      arguments: typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments ?? {}),
    },
  }))
  const content =
    typeof native.response === 'string'
      ? native.response
      : native.response
        ? JSON.stringify(native.response)
        : null
  return Response.json({
    id: newId('chatcmpl-'),
    object: 'chat.completion',
    created,
    model,
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content: toolCalls.length > 0 && !content ? null : content,
          refusal: null,
          ...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {}),
        },
        logprobs: null,
        finish_reason: toolCalls.length > 0 ? 'tool_calls' : 'stop',
      },
    ],
    ...(native.usage ? { usage: native.usage } : {}),
  })
}

/** Native `data: {"response": "..."}` events → chat.completion.chunk events (OpenAI-shaped ones pass through). */
function nativeStreamToOpenAi(
  native: ReadableStream<Uint8Array>,
  model: string,
  created: number,
): ReadableStream<Uint8Array> {
  const parser = new SseParser()
  const encoder = new TextEncoder()
  const id = newId('chatcmpl-')
  let started = false
  let finished = false
  let openAiShaped = false
  let usage: Record<string, unknown> | null = null
  const chunk = (delta: Record<string, unknown>, finishReason: string | null = null) =>
    sseData({
      id,
      object: 'chat.completion.chunk',
      created,
      model,
      choices: [{ index: 0, delta, finish_reason: finishReason }],
    })
  const finish = (): string[] => {
    if (finished) return []
    finished = true
    const events = [chunk({}, 'stop')]
    if (usage)
      events.push(sseData({ id, object: 'chat.completion.chunk', created, model, choices: [], usage }))
    events.push(sseData('[DONE]'))
    return events
  }
  const convert = (data: string): string[] => {
    if (data === '[DONE]') return openAiShaped ? [sseData('[DONE]')] : finish()
    const json: unknown = JSON.parse(data)
    if (json && typeof json === 'object' && Array.isArray((json as { choices?: unknown }).choices)) {
      openAiShaped = true // it brings its own finish chunk and [DONE]
      return [sseData(json)]
    }
    const parsed = NativeChunkSchema.parse(json)
    if (parsed.usage) usage = parsed.usage
    const out: string[] = []
    if (!started) {
      started = true
      out.push(chunk({ role: 'assistant', content: '' }))
    }
    if (parsed.response) out.push(chunk({ content: parsed.response }))
    return out
  }
  return native.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(bytes, controller) {
        const out = parser.pushBytes(bytes).flatMap((e) => (e.kind === 'data' ? convert(e.data) : []))
        if (out.length > 0) controller.enqueue(encoder.encode(out.join('')))
      },
      flush(controller) {
        const out = parser.end().flatMap((e) => (e.kind === 'data' ? convert(e.data) : []))
        if (out.length > 0) controller.enqueue(encoder.encode(out.join('')))
      },
    }),
  )
}
