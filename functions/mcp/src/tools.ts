/**
 * The product's capabilities as MCP tools. Each tool is one REST route (route-call.ts): its
 * arguments are an input schema written for a model (names, descriptions, ranges), mapped onto the
 * route's request; its structured output is the route's success body, described by the route's
 * own schema (route-schemas.ts). A refusal of the route becomes a tool error (`isError`) that keeps
 * the route's message and code, never a protocol error.
 */
import type { CallToolResult } from '@modelcontextprotocol/server'
import { z } from 'zod'
import { SEARCH_COUNT } from '../../../durable-objects/agent-run/web-search/search.schemas'
import { MODEL_ALIASES } from '../../../shared/catalog/model-aliases'
import { ALGORITHM_TYPES, LIFECYCLE_STATUSES, POLICY_CONTEXT_NAMES } from '../../../shared/crypto-policy'
import { REASONING_EFFORTS } from '../../../shared/providers/chat-wire'
import type { HttpMethod } from '../../../shared/routing/route-table'
import type { RouteAnswer, RouteRequest } from './route-call'

export interface ToolAnnotations {
  readOnlyHint?: boolean
  destructiveHint?: boolean
  idempotentHint?: boolean
  openWorldHint?: boolean
}

export interface ToolSpec<Input extends z.ZodObject = z.ZodObject> {
  name: string
  title: string
  description: string
  input: Input
  annotations: ToolAnnotations
  /** The route this tool runs (its path pattern, as in the route table). */
  route: { method: HttpMethod; path: string }
  request(args: z.infer<Input>): RouteRequest
  /** Narrows the route's answer (same shape); default: the answer as it is. */
  select?(args: z.infer<Input>, body: unknown): unknown
}

function tool<Input extends z.ZodObject>(spec: ToolSpec<Input>): ToolSpec {
  return spec as unknown as ToolSpec
}

const uuid = z.uuid()

export const TOOLS: readonly ToolSpec[] = [
  tool({
    name: 'web_search',
    title: 'Web search',
    description:
      "Search the web and get titled results with URLs and snippets. Use it for current events, documentation or facts you are unsure of. Metered as one search of the workspace's plan.",
    input: z.strictObject({
      query: z
        .string()
        .min(1)
        .max(400)
        .describe('What to search for, as you would type it into a search engine (1-400 characters).'),
      count: z
        .int()
        .min(SEARCH_COUNT.min)
        .max(SEARCH_COUNT.max)
        .optional()
        .describe(
          `How many results to return, ${SEARCH_COUNT.min}-${SEARCH_COUNT.max} (default ${SEARCH_COUNT.default}).`,
        ),
    }),
    annotations: { readOnlyHint: true, openWorldHint: true },
    route: { method: 'POST', path: '/svc/code/v1/search' },
    request: (args) => ({ method: 'POST', path: '/svc/code/v1/search', body: args }),
  }),
  tool({
    name: 'memory_create',
    title: 'Remember something',
    description:
      'Store a personal memory record for the calling user or key: a fact, preference or note worth recalling later with memory_search. Memories are private to the caller inside the workspace.',
    input: z.strictObject({
      content: z
        .string()
        .min(1)
        .max(32_000)
        .describe('The text to remember, written so that it makes sense on its own later.'),
      metadata: z
        .record(z.string(), z.unknown())
        .optional()
        .describe('Optional JSON object stored with the memory (e.g. {"topic":"billing"}).'),
    }),
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
    route: { method: 'POST', path: '/svc/memories' },
    request: ({ content, metadata }) => ({
      method: 'POST',
      path: '/svc/memories',
      body: metadata ? { content, metadata } : { content },
    }),
  }),
  tool({
    name: 'memory_search',
    title: 'Search memories',
    description:
      "Search the caller's personal memory records by meaning of the words (full-text ranking, then substring matches); best matches first, each with a score.",
    input: z.strictObject({
      query: z.string().min(1).max(1000).describe('Words to look for, e.g. "preferred deployment region".'),
      k: z.int().min(1).max(100).optional().describe('How many memories to return, 1-100 (default 3).'),
    }),
    annotations: { readOnlyHint: true, openWorldHint: false },
    route: { method: 'POST', path: '/svc/memories/search' },
    request: (args) => ({ method: 'POST', path: '/svc/memories/search', body: args }),
  }),
  tool({
    name: 'document_upload',
    title: 'Upload a document',
    description:
      "Add a text document to the workspace's knowledge base so that document_retrieve can find its passages. Uploading the same source again replaces that document (identical content changes nothing). Counts against the plan's document allowance.",
    input: z.strictObject({
      source: z
        .string()
        .min(1)
        .max(1024)
        .describe('A name for the document: a path, URL or title (e.g. "handbook/security.md").'),
      // The whole POST /mcp body is limited to 1 MiB (BODY_LIMITS.mcp), so less than the route's 1 MiB of content fits.
      content: z
        .string()
        .min(1)
        .max(900_000)
        .describe('The plain text (or Markdown) of the document, up to 900,000 characters.'),
    }),
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    route: { method: 'POST', path: '/svc/documents/upload' },
    request: (args) => ({ method: 'POST', path: '/svc/documents/upload', body: args }),
  }),
  tool({
    name: 'document_list',
    title: 'List documents',
    description:
      "List the workspace's documents, newest first: id, source, size, chunk count and indexing state. Page with after = next_cursor of the previous answer.",
    input: z.strictObject({
      limit: z.int().min(1).max(100).optional().describe('How many documents per page, 1-100 (default 20).'),
      after: z.string().min(1).max(200).optional().describe('next_cursor of the previous page.'),
    }),
    annotations: { readOnlyHint: true, openWorldHint: false },
    route: { method: 'GET', path: '/svc/documents' },
    request: ({ limit, after }) => ({
      method: 'GET',
      path: '/svc/documents',
      query: { limit: limit === undefined ? undefined : String(limit), after },
    }),
  }),
  tool({
    name: 'document_retrieve',
    title: 'Search documents',
    description:
      "Find the passages of the workspace's documents most relevant to a question (full-text and vector ranking fused). Each passage comes with its document's id and source and its character offsets; quote them when you answer.",
    input: z.strictObject({
      query: z
        .string()
        .min(1)
        .max(4000)
        .describe('The question or keywords, e.g. "how often are signing keys rotated".'),
      k: z.int().min(1).max(100).optional().describe('How many passages to return, 1-100 (default 3).'),
    }),
    annotations: { readOnlyHint: true, openWorldHint: false },
    route: { method: 'POST', path: '/svc/documents/retrieve' },
    request: (args) => ({ method: 'POST', path: '/svc/documents/retrieve', body: args }),
  }),
  tool({
    name: 'chat_completion',
    title: 'Ask a model',
    description:
      "Get one answer from one of the workspace's models (a one-shot chat completion, not streamed). Returns the whole completion: the answer is choices[0].message.content. Metered like any chat completion of the plan.",
    input: z.strictObject({
      model: z
        .enum(MODEL_ALIASES)
        .describe('Model alias; the plan decides which ones the workspace may use.'),
      prompt: z.string().min(1).describe('The user message.'),
      system: z
        .string()
        .min(1)
        .optional()
        .describe('Optional system message that sets behaviour or context.'),
      max_tokens: z.int().min(1).optional().describe('Upper bound on the answer length in tokens.'),
      temperature: z
        .number()
        .min(0)
        .max(2)
        .optional()
        .describe('Sampling temperature, 0-2 (lower is more deterministic).'),
      reasoning_effort: z
        .enum(REASONING_EFFORTS)
        .optional()
        .describe('How hard a thinking model should think.'),
    }),
    annotations: { readOnlyHint: true, openWorldHint: true },
    route: { method: 'POST', path: '/svc/chat/completions' },
    request: ({ model, prompt, system, ...options }) => ({
      method: 'POST',
      path: '/svc/chat/completions',
      body: {
        model,
        messages: [
          ...(system ? [{ role: 'system', content: system }] : []),
          { role: 'user', content: prompt },
        ],
        stream: false,
        ...options,
      },
    }),
  }),
  tool({
    name: 'reasoning_job_create',
    title: 'Start a reasoning job',
    description:
      'Start a durable reasoning job on svc-hive or svc-swarm (optionally with real quantum hardware, per plan). Returns the job envelope; poll it with reasoning_job_get. Retrying with the same idempotency_key and arguments returns the same job instead of starting another.',
    input: z.strictObject({
      idempotency_key: z
        .string()
        .min(16)
        .max(160)
        .describe(
          'A unique key for this job, 16-160 characters (e.g. a UUID); reuse it only to retry the same request.',
        ),
      prompt: z.string().min(1).max(64_000).describe('The problem to reason about (1-64000 characters).'),
      model: z
        .enum(['svc-hive', 'svc-swarm'])
        .describe('svc-hive (log-probability scoring) or svc-swarm (judge scoring).'),
      product: z
        .enum(['simulation_cloud', 'managed_qpu', 'byopa_managed'])
        .describe(
          'Where selection runs: simulation_cloud (simulator), managed_qpu (real hardware, if entitled), byopa_managed (your provider connection).',
        ),
      provider_connection_id: uuid
        .nullable()
        .optional()
        .describe('Your provider connection, for byopa_managed.'),
      workspace_id: uuid.nullable().optional().describe('Optional workspace the job belongs to.'),
    }),
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: true },
    route: { method: 'POST', path: '/svc/quantum-reasoning/jobs' },
    request: ({ idempotency_key, ...body }) => ({
      method: 'POST',
      path: '/svc/quantum-reasoning/jobs',
      headers: { 'idempotency-key': idempotency_key },
      body,
    }),
  }),
  tool({
    name: 'reasoning_job_get',
    title: 'Get a reasoning job',
    description:
      'Get a reasoning job of this workspace by id: its status, candidates, selection evidence, result, usage and receipt.',
    input: z.strictObject({ job_id: uuid.describe('The job id returned by reasoning_job_create.') }),
    annotations: { readOnlyHint: true, openWorldHint: false },
    route: { method: 'GET', path: '/svc/quantum-reasoning/jobs/:jobId' },
    request: ({ job_id }) => ({
      method: 'GET',
      path: `/svc/quantum-reasoning/jobs/${encodeURIComponent(job_id)}`,
    }),
  }),
  tool({
    name: 'crypto_policy_check',
    title: 'Check an algorithm against the crypto policy',
    description:
      "Is this cryptographic algorithm allowed by the workspace's crypto policy in this context? Returns the decision, every rule that decided it, the policy mode and what enforce mode would do.",
    input: z.strictObject({
      algorithm: z
        .string()
        .min(1)
        .max(64)
        .describe(
          'Registry id, standard name, alias or hybrid, e.g. dilithium-3, ML-DSA-65, EdDSA, x25519+kyber-768.',
        ),
      context: z
        .enum(POLICY_CONTEXT_NAMES as [string, ...string[]])
        .optional()
        .describe('Where the algorithm is used (default request_declared).'),
    }),
    annotations: { readOnlyHint: true, openWorldHint: false },
    route: { method: 'GET', path: '/platform/v1/crypto/policy/check' },
    request: ({ algorithm, context }) => ({
      method: 'GET',
      path: '/platform/v1/crypto/policy/check',
      query: { algorithm, context },
    }),
  }),
  tool({
    name: 'crypto_algorithm_lookup',
    title: 'Look up the algorithm registry',
    description:
      'Look up cryptographic algorithms in the registry: standard name, type, NIST lifecycle status, security level, replacement and deprecation date. Give algorithm for one entry (any id, standard name or alias), or filter by status and type.',
    input: z.strictObject({
      algorithm: z
        .string()
        .min(1)
        .max(64)
        .optional()
        .describe('An id, standard name or alias, e.g. kyber-768, ML-KEM-768, rsa-2048.'),
      status: z.enum(LIFECYCLE_STATUSES).optional().describe('Only algorithms in this lifecycle status.'),
      type: z.enum(ALGORITHM_TYPES).optional().describe('Only algorithms of this type.'),
    }),
    annotations: { readOnlyHint: true, openWorldHint: false },
    route: { method: 'GET', path: '/platform/v1/crypto/algorithms' },
    request: ({ status, type }) => ({
      method: 'GET',
      path: '/platform/v1/crypto/algorithms',
      query: { status, type },
    }),
    select: ({ algorithm }, body) => {
      if (!algorithm) return body
      const wanted = algorithm.toLowerCase()
      const list = body as { object: string; data: { id: string; standardName: string; aliases: string[] }[] }
      return {
        ...list,
        data: list.data.filter(
          (a) =>
            a.id.toLowerCase() === wanted ||
            a.standardName.toLowerCase() === wanted ||
            a.aliases.some((alias) => alias.toLowerCase() === wanted),
        ),
      }
    },
  }),
  tool({
    name: 'models_list',
    title: 'List models',
    description:
      'List the model aliases this service offers, with their context windows, features and prices (the public catalog; the plan decides which the workspace may use).',
    input: z.strictObject({}),
    annotations: { readOnlyHint: true, openWorldHint: false },
    route: { method: 'GET', path: '/svc/models' },
    request: () => ({ method: 'GET', path: '/svc/models' }),
  }),
]

interface ErrorBody {
  error?: { message?: string; code?: string; param?: string | null }
  svc_upgrade?: unknown
}

/** A refused route call as text: the route's message, status and code, `Retry-After`, and the upgrade decision. */
export function refusalText(answer: RouteAnswer): string {
  const error = (answer.body as ErrorBody | null)?.error
  const message =
    error?.message ?? (typeof answer.body === 'string' && answer.body ? answer.body : 'The request failed.')
  const lines = [
    `${message} (HTTP ${answer.status}${error?.code ? `, ${error.code}` : ''}${error?.param ? `, param ${error.param}` : ''})`,
  ]
  const retryAfter = answer.headers['retry-after']
  if (retryAfter) lines.push(`Retry after ${retryAfter} s.`)
  const upgrade = (answer.body as ErrorBody | null)?.svc_upgrade
  if (upgrade) lines.push(`Upgrade decision: ${JSON.stringify(upgrade)}`)
  return lines.join('\n')
}

/** What the model sees: the route's JSON on success; on a refusal, refusalText as a tool error. */
export function toolOutcome(
  spec: ToolSpec,
  args: unknown,
  answer: RouteAnswer,
  structured: boolean,
): CallToolResult {
  if (answer.status >= 200 && answer.status < 300) {
    const body = spec.select ? spec.select(args as never, answer.body) : answer.body
    const isObject = typeof body === 'object' && body !== null && !Array.isArray(body)
    return {
      isError: false,
      content: [{ type: 'text', text: typeof body === 'string' ? body : JSON.stringify(body) }],
      ...(structured && isObject ? { structuredContent: body as Record<string, unknown> } : {}),
    }
  }
  return { isError: true, content: [{ type: 'text', text: refusalText(answer) }] }
}
