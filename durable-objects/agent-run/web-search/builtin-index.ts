/**
 * The built-in search index used in test mode (`svc_sk_test_` keys) and, when listed in
 * SEARCH_PROVIDERS as `builtin`, in local development without provider keys. It answers from a
 * small corpus documenting this product, scored by token overlap with the query: no network, no
 * clock, no randomness, so the same query always gives the same results in the same order.
 *
 * Scoring: the query and each entry are lower-cased and split into word tokens (stop words and
 * one-letter tokens dropped, a trailing plural "s" removed). Every distinct query token scores 3
 * when it is in the entry's title and 1 when it is in its text; entries scoring 0 are left out;
 * ties keep corpus order. The snippet is the entry's sentence sharing the most tokens with the
 * query.
 */
import type { SearchHit } from './search.schemas'
import type { SearchProvider } from './search-providers'

export interface IndexEntry {
  title: string
  /** Path under the docs base URL. */
  path: string
  text: string
}

export const BUILTIN_DOCS_BASE_URL = 'https://svc.example/docs'

export const BUILTIN_CORPUS: readonly IndexEntry[] = [
  {
    title: 'Agent turns over NDJSON (svc.code.v1)',
    path: 'agent-protocol#turn-request',
    text: 'POST /svc/code/v1/turns starts one agent turn and answers with an application/x-ndjson stream of events. The request names the protocol svc.code.v1, a session_id, a turn_id, an optional run_id, the model alias, the mode (manual, plan, edit or auto), the request text, the workspace, the transcript and the capabilities of the client.',
  },
  {
    title: 'Event envelope and sequence numbers',
    path: 'agent-protocol#envelope',
    text: 'Every line of a turn stream is one JSON envelope with v, seq, run_id, turn_id, ts, type and data. The seq number is gapless per run and starts at 1. Each turn ends with exactly one terminal event: turn.completed, turn.failed or turn.cancelled.',
  },
  {
    title: 'Resuming a turn stream with cursor',
    path: 'agent-protocol#resume',
    text: 'A client that lost its connection posts the same turn again with cursor set to the last seq it received. The server replays every stored event with a larger seq and then follows the live turn. A cursor past the last event of the run is rejected with status 400.',
  },
  {
    title: 'Reattaching and the 409 rule',
    path: 'agent-protocol#reattach',
    text: 'Posting the same run_id and turn_id with the same body reattaches to the running turn. Posting the same run_id and turn_id with a different body is rejected with status 409; use a new turn_id for a new request.',
  },
  {
    title: 'Approval modes: manual, plan, edit and auto',
    path: 'agent-protocol#approvals',
    text: 'Manual mode asks the user before every tool call. Plan mode runs read-only tools only and refuses edits. Edit mode runs read-only tools at once and asks before edits. Auto mode approves tool calls by policy except destructive tools, which still need approval.',
  },
  {
    title: 'Client tools and MCP tools',
    path: 'agent-protocol#client-tools',
    text: 'A host registers up to 64 client tools per turn, each with a name, a description, a JSON Schema input_schema and tags such as read-only, edit, network or destructive. The server validates every invocation against the schema before offering it to the client, and the client returns the output in tool_results of the next turn.',
  },
  {
    title: 'Answering approvals in the next turn',
    path: 'agent-protocol#continuation',
    text: 'When a turn completes with stop_reason awaiting_approval, the client answers in the next turn with approvals, each naming the approval_id and the decision approve or deny. Approvals that are not answered before expires_at are resolved as deny by expiry.',
  },
  {
    title: 'Heartbeats on idle streams',
    path: 'agent-protocol#heartbeat',
    text: 'When nothing happens on a turn stream for 15 seconds the server writes a heartbeat line. A heartbeat repeats the seq of the last event written and is never stored or replayed.',
  },
  {
    title: 'Agent run states',
    path: 'agent-protocol#run-states',
    text: 'A run is running, awaiting_approval, awaiting_client_tool, completed, failed or cancelled. GET /svc/agents/runs/{runId} returns the state with bounded usage; DELETE cancels a running run and answers 409 when the run is already terminal.',
  },
  {
    title: 'Web search tool',
    path: 'web-search',
    text: 'POST /svc/code/v1/search runs the web_search tool for a query with a count from 1 to 10, default 5. Providers are tried in order: Brave Search, Tavily and SearXNG. A 502 lists every provider that failed and a 503 means no provider is configured. Test keys search this built-in index instead.',
  },
  {
    title: 'Audio transcription',
    path: 'transcription',
    text: 'POST /svc/code/v1/transcribe accepts multipart audio with an optional language and prompt and returns the text with the provider and model used. WAV, MP3, Ogg Opus or Vorbis, FLAC, WebM and MP4 audio up to 25 MiB are accepted; an empty, oversize, unsupported or mislabeled file is a 400.',
  },
  {
    title: 'Model aliases',
    path: 'models',
    text: 'The public model aliases are svc-cell, svc-brood, svc-comb, svc-buzz, svc-hive and svc-swarm. GET /svc/models lists them with their immutable snapshots; enable_thinking is rejected for a model without thinking mode.',
  },
  {
    title: 'Chat completions',
    path: 'chat',
    text: 'POST /svc/chat/completions is OpenAI compatible. It returns one JSON chat.completion or, with stream true, server-sent events ending in data: [DONE]. Temperature is 0 to 2 and reasoning_effort is low, medium, high, xhigh, max or ultracode.',
  },
  {
    title: 'Errors and upgrade decisions',
    path: 'errors',
    text: 'Errors use the body error with message, type, param and code. Status 402, 403 and 429 on chat completions add svc_upgrade, an upgrade decision with a reason, the current and required plan and actions.',
  },
  {
    title: 'Test mode keys',
    path: 'test-mode',
    text: 'API keys starting with svc_sk_test_ run the whole pipeline against a deterministic built-in simulated model and this built-in search index. Nothing is billed and live keys never reach the simulator.',
  },
  {
    title: 'Hosted MCP server',
    path: 'mcp',
    text: 'POST /mcp is a Streamable HTTP MCP endpoint speaking JSON-RPC. It accepts an OAuth credential or an API key; without one it answers 401 with a pointer to the protected-resource metadata at /oauth/protected-resource.',
  },
  {
    title: 'Quantum reasoning jobs',
    path: 'reasoning-jobs',
    text: 'POST /svc/quantum-reasoning/jobs queues a durable reasoning job on svc-hive or svc-swarm with an Idempotency-Key. The same key with the same body replays the job; a different body is a 409.',
  },
]

const STOP_WORDS = new Set([
  'a',
  'an',
  'and',
  'are',
  'as',
  'at',
  'be',
  'by',
  'do',
  'does',
  'for',
  'from',
  'how',
  'i',
  'in',
  'is',
  'it',
  'of',
  'on',
  'or',
  'the',
  'to',
  'what',
  'when',
  'which',
  'with',
  'can',
  'my',
  'me',
  'its',
  'this',
  'that',
  'there',
])

export function tokenize(text: string): string[] {
  return text
    .toLowerCase()
    .split(/[^\p{L}\p{N}_]+/u)
    .filter((t) => t.length > 1 && !STOP_WORDS.has(t))
    .map((t) => (t.length > 3 && t.endsWith('s') && !t.endsWith('ss') ? t.slice(0, -1) : t))
}

interface Prepared {
  entry: IndexEntry
  order: number
  titleTokens: Set<string>
  textTokens: Set<string>
  sentences: Array<{ text: string; tokens: Set<string> }>
}

function prepare(corpus: readonly IndexEntry[]): Prepared[] {
  return corpus.map((entry, order) => ({
    entry,
    order,
    titleTokens: new Set(tokenize(entry.title)),
    textTokens: new Set(tokenize(entry.text)),
    sentences: (entry.text.match(/[^.!?]+[.!?]?/g) ?? [entry.text]).map((s) => ({
      text: s.trim(),
      tokens: new Set(tokenize(s)),
    })),
  }))
}

export class BuiltinSearchIndex {
  private readonly prepared: Prepared[]
  private readonly base: string

  constructor(corpus: readonly IndexEntry[] = BUILTIN_CORPUS, docsBaseUrl: string = BUILTIN_DOCS_BASE_URL) {
    this.prepared = prepare(corpus)
    this.base = docsBaseUrl.replace(/\/+$/, '')
  }

  search(query: string, count: number): SearchHit[] {
    const terms = [...new Set(tokenize(query))]
    if (terms.length === 0) return []
    return this.prepared
      .map((p) => ({
        p,
        score: terms.reduce(
          (sum, t) => sum + (p.titleTokens.has(t) ? 3 : 0) + (p.textTokens.has(t) ? 1 : 0),
          0,
        ),
      }))
      .filter((s) => s.score > 0)
      .sort((a, b) => b.score - a.score || a.p.order - b.p.order)
      .slice(0, count)
      .map(({ p }) => {
        let best = p.sentences[0]
        let bestHits = -1
        for (const s of p.sentences) {
          const n = terms.filter((t) => s.tokens.has(t)).length
          if (n > bestHits) {
            best = s
            bestHits = n
          }
        }
        return { title: p.entry.title, url: `${this.base}/${p.entry.path}`, snippet: best?.text ?? '' }
      })
  }
}

/** The built-in index as a provider of the chain; it never fails and never touches the network. */
export function builtinProvider(index: BuiltinSearchIndex = new BuiltinSearchIndex()): SearchProvider {
  return {
    name: 'builtin',
    async search(call) {
      return index.search(call.query, call.count)
    },
  }
}
