/**
 * POST /svc/chat/completions: request and response schemas (spec 000, "Chat completion
 * request/response"), plus the OpenAI request fields real clients send.
 *
 * - The spec's rules: role ∈ system|user|assistant|tool, content a string or an array of parts,
 *   at least 1 message, model a model alias, max_tokens an integer >= 1, temperature 0..2,
 *   reasoning_effort ∈ low|medium|high|xhigh|max|ultracode, stream a boolean.
 * - OpenAI fields are validated with OpenAI's limits. An assistant message that carries
 *   tool_calls may have null/absent content (what the SDK echoes back); a tool message needs
 *   tool_call_id.
 * - The request object is open (the spec does not close it): unknown top-level fields are
 *   dropped, never forwarded upstream.
 * - A request that breaks rules is one 400 `invalid_request_body` from the one renderer of every
 *   route (shared/http/validation.ts): each problem as field path, rule and value received,
 *   "temperature must be between 0 and 2 (got 3.5)", and `param` the first problem's path.
 */
import { z } from 'zod'
import { MODEL_ALIASES } from '../../../shared/catalog/model-aliases'
import { parseWith } from '../../../shared/http/validation'
import { CHAT_ROLES, ChatCompletionChunkSchema, REASONING_EFFORTS } from '../../../shared/providers/chat-wire'
import { isClosedChatCompletionRequest } from './chat-request.validator.generated'

const between = (min: number, max: number) => ({ error: `must be between ${min} and ${max}` })
const intAtLeast = (min: number) =>
  z.int({ error: `must be an integer >= ${min}` }).min(min, { error: `must be an integer >= ${min}` })
const oneOf = (values: readonly string[]) => ({ error: `must be one of ${values.join(', ')}` })

const TextPart = z.object({ type: z.literal('text'), text: z.string() })
const ImagePart = z.object({
  type: z.literal('image_url'),
  image_url: z.object({ url: z.string().min(1), detail: z.enum(['auto', 'low', 'high']).optional() }),
})
const AudioPart = z.object({
  type: z.literal('input_audio'),
  input_audio: z.object({ data: z.string().min(1), format: z.enum(['wav', 'mp3']) }),
})
const FilePart = z.object({
  type: z.literal('file'),
  file: z.object({
    file_data: z.string().optional(),
    file_id: z.string().optional(),
    filename: z.string().optional(),
  }),
})
const RefusalPart = z.object({ type: z.literal('refusal'), refusal: z.string() })
export const ContentPartSchema = z.discriminatedUnion('type', [
  TextPart,
  ImagePart,
  AudioPart,
  FilePart,
  RefusalPart,
])

const ContentSchema = z.union([z.string(), z.array(ContentPartSchema)], {
  error: 'must be a string or an array of content parts',
})

const FunctionName = z
  .string()
  .regex(/^[a-zA-Z0-9_-]{1,64}$/, { error: 'must be 1-64 letters, digits, "_" or "-"' })

const ToolCallSchema = z.object({
  id: z.string().min(1),
  type: z.literal('function'),
  function: z.object({ name: FunctionName, arguments: z.string() }),
})

const ChatMessageFields = z.object({
  role: z.enum(CHAT_ROLES, oneOf(CHAT_ROLES)),
  content: ContentSchema.nullish(),
  name: z.string().min(1).max(64).optional(),
  tool_call_id: z.string().min(1).optional(),
  tool_calls: z.array(ToolCallSchema).optional(),
  // Present when a client echoes back a response message; accepted and not forwarded.
  refusal: z.string().nullish(),
  annotations: z.array(z.unknown()).optional(),
})

/** A rule across fields, as the schema reports it (a zod custom issue). */
export interface CrossFieldProblem {
  path: PropertyKey[]
  input: unknown
  message: string
}

/**
 * A message's rules across fields. The schema refines with them, and the caller of the generated
 * validator (which checks each field alone) runs the same function.
 */
export function messageProblems(message: z.output<typeof ChatMessageFields>): CrossFieldProblem[] {
  const problems: CrossFieldProblem[] = []
  const carriesToolCalls = message.role === 'assistant' && (message.tool_calls?.length ?? 0) > 0
  if ((message.content === undefined || message.content === null) && !carriesToolCalls) {
    problems.push({
      path: ['content'],
      input: message.content,
      message:
        message.content === null
          ? 'must be a string or an array of content parts (null is only allowed on assistant messages with tool_calls)'
          : 'is required',
    })
  }
  if (message.role === 'tool' && message.tool_call_id === undefined) {
    problems.push({ path: ['tool_call_id'], input: undefined, message: 'is required on tool messages' })
  }
  if (message.tool_calls !== undefined && message.role !== 'assistant') {
    problems.push({
      path: ['tool_calls'],
      input: message.tool_calls,
      message: 'is only allowed on assistant messages',
    })
  }
  return problems
}

const reportProblems =
  <T>(problems: (value: T) => CrossFieldProblem[]) =>
  (value: T, ctx: z.RefinementCtx) => {
    for (const problem of problems(value)) ctx.addIssue({ code: 'custom', ...problem })
  }

const RefinedChatMessage = ChatMessageFields.superRefine(reportProblems(messageProblems))

/** What is forwarded of a message: the fields a client echoes back from a response are dropped. */
export function withoutEchoedFields({
  refusal: _refusal,
  annotations: _annotations,
  ...message
}: z.output<typeof ChatMessageFields>) {
  return message
}

export const ChatMessageSchema = RefinedChatMessage.transform(withoutEchoedFields)

const FunctionToolSchema = z.object({
  type: z.literal('function'),
  function: z.object({
    name: FunctionName,
    description: z.string().optional(),
    parameters: z.record(z.string(), z.unknown()).optional(),
    strict: z.boolean().nullish(),
  }),
})

const ToolChoiceSchema = z.union(
  [
    z.enum(['none', 'auto', 'required']),
    z.object({ type: z.literal('function'), function: z.object({ name: FunctionName }) }),
  ],
  { error: 'must be "none", "auto", "required" or {"type":"function","function":{"name":...}}' },
)

const ResponseFormatSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('text') }),
  z.object({ type: z.literal('json_object') }),
  z.object({
    type: z.literal('json_schema'),
    json_schema: z.object({
      name: FunctionName,
      description: z.string().optional(),
      schema: z.record(z.string(), z.unknown()).optional(),
      strict: z.boolean().nullish(),
    }),
  }),
])

const Penalty = z.number(between(-2, 2)).min(-2, between(-2, 2)).max(2, between(-2, 2)).nullish()

const ChatRequestFields = z.object({
  model: z.enum(MODEL_ALIASES, oneOf(MODEL_ALIASES)),
  messages: z
    .array(ChatMessageSchema, { error: 'must be an array of messages' })
    .min(1, { error: 'must contain at least 1 message' }),
  stream: z.boolean().optional(),
  stream_options: z
    .object({ include_usage: z.boolean().optional(), include_obfuscation: z.boolean().optional() })
    .nullish(),
  max_tokens: intAtLeast(1).optional(),
  max_completion_tokens: intAtLeast(1).optional(),
  temperature: z.number(between(0, 2)).min(0, between(0, 2)).max(2, between(0, 2)).nullish(),
  top_p: z.number(between(0, 1)).min(0, between(0, 1)).max(1, between(0, 1)).nullish(),
  reasoning_effort: z.enum(REASONING_EFFORTS, oneOf(REASONING_EFFORTS)).optional(),
  n: z.int(between(1, 128)).min(1, between(1, 128)).max(128, between(1, 128)).optional(),
  seed: z.int({ error: 'must be an integer' }).optional(),
  stop: z
    .union([z.string(), z.array(z.string()).max(4)], {
      error: 'must be a string or an array of up to 4 strings',
    })
    .nullish(),
  presence_penalty: Penalty,
  frequency_penalty: Penalty,
  logit_bias: z.record(z.string(), z.number().min(-100).max(100)).nullish(),
  logprobs: z.boolean().nullish(),
  top_logprobs: z.int(between(0, 20)).min(0, between(0, 20)).max(20, between(0, 20)).nullish(),
  tools: z.array(FunctionToolSchema).max(128).optional(),
  tool_choice: ToolChoiceSchema.optional(),
  parallel_tool_calls: z.boolean().optional(),
  response_format: ResponseFormatSchema.optional(),
  user: z.string().max(256).optional(),
  metadata: z
    .record(z.string().max(64), z.string().max(512))
    .refine((m) => Object.keys(m).length <= 16, { error: 'must have at most 16 keys' })
    .nullish(),
})

/** The request's rules across fields (the schema refines with them; see messageProblems). */
export function requestProblems(request: z.output<typeof ChatRequestFields>): CrossFieldProblem[] {
  const problems: CrossFieldProblem[] = []
  const toolNames = new Set((request.tools ?? []).map((tool) => tool.function.name))
  const choice = request.tool_choice
  if (choice !== undefined && choice !== 'none' && toolNames.size === 0) {
    problems.push({ path: ['tool_choice'], input: choice, message: 'is only allowed when tools are given' })
  }
  if (typeof choice === 'object' && toolNames.size > 0 && !toolNames.has(choice.function.name)) {
    problems.push({
      path: ['tool_choice', 'function', 'name'],
      input: choice.function.name,
      message: 'must name one of the tools given',
    })
  }
  if (request.top_logprobs !== undefined && request.top_logprobs !== null && request.logprobs !== true) {
    problems.push({ path: ['top_logprobs'], input: request.top_logprobs, message: 'requires logprobs: true' })
  }
  return problems
}

export const ChatCompletionRequestSchema = ChatRequestFields.superRefine(reportProblems(requestProblems))

/** The refinements the generated validator leaves to its caller (scripts/generate-validators.ts). */
export const CHAT_REQUEST_CHECKED_AFTER: readonly z.ZodType[] = [
  RefinedChatMessage,
  ChatCompletionRequestSchema,
]

export type ChatCompletionRequest = z.infer<typeof ChatCompletionRequestSchema>

/**
 * The common case, decided by the validator generated from this schema (every field valid,
 * nothing to strip, no refinement it cannot express) and the same cross-field rules: the value zod
 * would return, or null for zod to decide.
 */
export function readClosedChatRequest(body: unknown): ChatCompletionRequest | null {
  if (!isClosedChatCompletionRequest(body)) return null
  const request = body as z.output<typeof ChatRequestFields>
  if (requestProblems(request).length > 0 || request.messages.some((m) => messageProblems(m).length > 0)) {
    return null
  }
  return { ...request, messages: request.messages.map(withoutEchoedFields) }
}

/** Validates a parsed JSON body; throws the 400 above. */
export function parseChatCompletionRequest(body: unknown): ChatCompletionRequest {
  const closed = readClosedChatRequest(body)
  if (closed) return closed
  return parseWith(ChatCompletionRequestSchema, body)
}

// ---------------------------------------------------------------------------------------------
// Responses

/** The spec's chat completion response: the six fields required, extra top-level fields allowed. */
export const ChatCompletionResponseSchema = z
  .object({
    id: z.string(),
    object: z.literal('chat.completion'),
    created: z.int(),
    model: z.string(),
    choices: z.array(z.record(z.string(), z.unknown())),
    usage: z.record(z.string(), z.unknown()),
  })
  .loose()

export type { ChatCompletionChunk } from '../../../shared/providers/chat-wire'
/** One SSE chunk of a streamed completion (`object: "chat.completion.chunk"`). */
export { ChatCompletionChunkSchema }
