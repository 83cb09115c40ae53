/**
 * A local HTTP server faking an OpenTelemetry Collector's OTLP/HTTP receiver, for what is outside
 * the product (the collector the telemetry worker forwards to). It speaks the receiver's wire
 * behaviour:
 *   POST /v1/traces | /v1/metrics | /v1/logs, Content-Type application/x-protobuf or
 *   application/json (else 415), Content-Encoding gzip / deflate decoded (unknown → 400), a body
 *   that is not a readable Export request → 400 with a google.rpc.Status in the request's
 *   encoding, success → 200 with the Export response in the request's encoding, other paths 404,
 *   other methods 405, a wrong Authorization (when the fake has a credential) → 401.
 * Scripted faults (`script()`): partial success (rejected count and message), any HTTP status
 * with an optional Retry-After (429, 503...), and a hang (no answer until the client gives up).
 * Every request is recorded with its exact bytes (as sent, before decoding) and headers.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo, Socket } from 'node:net'
import { gunzipSync, inflateSync } from 'node:zlib'
import { BinaryReader, BinaryWriter, WireType } from '@bufbuild/protobuf/wire'

export type CollectorFault =
  | { kind: 'partial'; rejected: number; message: string }
  | { kind: 'status'; status: number; retryAfter?: string; body?: string }
  | { kind: 'hang' }

export interface CollectorRule {
  fault: CollectorFault
  /** How many requests the fault applies to (default 1). */
  times?: number
  /**
   * Only requests whose x-svc-request-id (the gateway's request id, which echoes a client's
   * x-request-id) starts with this; tests running side by side tag their own requests.
   */
  match?: string
}

export interface RecordedExport {
  path: string
  headers: Record<string, string>
  /** The body exactly as received, base64. */
  body: string
  /** What the fake answered. */
  status: number
  receivedAt: number
}

export interface OtlpCollectorFake {
  url: string
  controlUrl: string
  authorization: string | undefined
  requests: RecordedExport[]
  script(rule: CollectorRule): void
  reset(): void
  close(): Promise<void>
}

const SIGNAL_PATHS = new Set(['/v1/traces', '/v1/metrics', '/v1/logs'])
const REJECTED_FIELD_JSON: Record<string, string> = {
  '/v1/traces': 'rejectedSpans',
  '/v1/metrics': 'rejectedDataPoints',
  '/v1/logs': 'rejectedLogRecords',
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = []
  for await (const chunk of req) chunks.push(chunk as Buffer)
  return Buffer.concat(chunks)
}

function statusBody(json: boolean, code: number, message: string): { type: string; body: Buffer | string } {
  if (json) return { type: 'application/json', body: JSON.stringify({ code, message }) }
  const writer = new BinaryWriter()
  writer.tag(1, WireType.Varint).int32(code).tag(2, WireType.LengthDelimited).string(message)
  return { type: 'application/x-protobuf', body: Buffer.from(writer.finish()) }
}

/** The top level of an Export request: repeated field 1 of whole messages, as the Collector's decoder needs. */
function readableProtobuf(bytes: Uint8Array): boolean {
  try {
    const reader = new BinaryReader(bytes)
    while (reader.pos < reader.len) {
      const [, wireType] = reader.tag()
      reader.skip(wireType)
    }
    return true
  } catch {
    return false
  }
}

function partialSuccess(json: boolean, path: string, rejected: number, message: string) {
  if (json) {
    return {
      type: 'application/json',
      body: JSON.stringify({
        partialSuccess: { [REJECTED_FIELD_JSON[path]!]: String(rejected), errorMessage: message },
      }),
    }
  }
  const writer = new BinaryWriter()
  writer.tag(1, WireType.LengthDelimited).fork()
  writer.tag(1, WireType.Varint).int64(rejected).tag(2, WireType.LengthDelimited).string(message)
  writer.join()
  return { type: 'application/x-protobuf', body: Buffer.from(writer.finish()) }
}

export async function startOtlpCollectorFake(
  options: {
    authorization?: string
    /** false: keep nothing (benchmarks: memory stays flat under load). */
    record?: boolean
  } = {},
): Promise<OtlpCollectorFake> {
  const requests: RecordedExport[] = []
  const rules: { fault: CollectorFault; remaining: number; match: string }[] = []
  const sockets = new Set<Socket>()

  const nextFault = (requestId: string): CollectorFault | null => {
    const index = rules.findIndex((r) => requestId.startsWith(r.match))
    const rule = rules[index]
    if (!rule) return null
    rule.remaining -= 1
    if (rule.remaining <= 0) rules.splice(index, 1)
    return rule.fault
  }
  const addRule = (rule: CollectorRule) =>
    rules.push({ fault: rule.fault, remaining: rule.times ?? 1, match: rule.match ?? '' })

  const server = createServer(async (req, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', 'http://collector')
    const body = await readBody(req)
    const headers = Object.fromEntries(
      Object.entries(req.headers).map(([k, v]) => [k, Array.isArray(v) ? v.join(', ') : (v ?? '')]),
    )
    const record = (status: number) => {
      if (options.record === false) return
      requests.push({
        path: url.pathname,
        headers,
        body: body.toString('base64'),
        status,
        receivedAt: Date.now(),
      })
    }
    const answer = (
      status: number,
      type: string | null,
      payload: Buffer | string,
      extra: Record<string, string> = {},
    ) => {
      record(status)
      res.writeHead(status, { ...(type ? { 'content-type': type } : {}), ...extra }).end(payload)
    }

    if (!SIGNAL_PATHS.has(url.pathname)) return answer(404, 'text/plain', '404 page not found')
    if (req.method !== 'POST') return answer(405, 'text/plain', '405 method not allowed, supported: [POST]')
    const type = (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase()
    const json = type === 'application/json'
    if (!json && type !== 'application/x-protobuf') {
      return answer(
        415,
        'text/plain',
        `415 unsupported media type, supported: [application/json, application/x-protobuf]`,
      )
    }
    if (options.authorization && req.headers.authorization !== options.authorization) {
      const s = statusBody(json, 16, 'missing or invalid bearer token')
      return answer(401, s.type, s.body)
    }
    let decoded: Buffer
    try {
      const encoding = (req.headers['content-encoding'] ?? '').trim().toLowerCase()
      decoded =
        encoding === 'gzip'
          ? gunzipSync(body)
          : encoding === 'deflate'
            ? inflateSync(body)
            : encoding === '' || encoding === 'identity'
              ? body
              : (() => {
                  throw new Error(`unsupported Content-Encoding ${encoding}`)
                })()
    } catch (err) {
      const s = statusBody(json, 3, String(err))
      return answer(400, s.type, s.body)
    }
    const readable = json
      ? (() => {
          try {
            const value = JSON.parse(decoded.toString('utf8')) as unknown
            return typeof value === 'object' && value !== null && !Array.isArray(value)
          } catch {
            return false
          }
        })()
      : readableProtobuf(decoded)
    if (!readable) {
      const s = statusBody(json, 3, 'failed to unmarshal request body')
      return answer(400, s.type, s.body)
    }

    const fault = nextFault(headers['x-svc-request-id'] ?? '')
    if (fault?.kind === 'hang') {
      record(0)
      return // never answered; the client's timeout ends it
    }
    if (fault?.kind === 'status') {
      const s =
        fault.body !== undefined
          ? { type: 'text/plain', body: fault.body }
          : statusBody(json, 14, `fault ${fault.status}`)
      return answer(fault.status, s.type, s.body, fault.retryAfter ? { 'retry-after': fault.retryAfter } : {})
    }
    if (fault?.kind === 'partial') {
      const p = partialSuccess(json, url.pathname, fault.rejected, fault.message)
      return answer(200, p.type, p.body)
    }
    return json
      ? answer(200, 'application/json', '{}')
      : answer(200, 'application/x-protobuf', Buffer.alloc(0))
  })
  server.on('connection', (socket) => {
    sockets.add(socket)
    socket.on('close', () => sockets.delete(socket))
  })

  const control = createServer(async (req, res) => {
    const url = new URL(req.url ?? '/', 'http://control')
    if (req.method === 'POST' && url.pathname === '/script') {
      addRule(JSON.parse((await readBody(req)).toString('utf8')) as CollectorRule)
      return res.writeHead(204).end()
    }
    if (req.method === 'POST' && url.pathname === '/reset') {
      rules.length = 0
      requests.length = 0
      return res.writeHead(204).end()
    }
    if (req.method === 'GET' && url.pathname === '/requests') {
      const tag = url.searchParams.get('match') ?? ''
      const list = requests.filter((r) => (r.headers['x-svc-request-id'] ?? '').startsWith(tag))
      return res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(list))
    }
    res.writeHead(404).end()
  })

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  await new Promise<void>((resolve) => control.listen(0, '127.0.0.1', resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    controlUrl: `http://127.0.0.1:${(control.address() as AddressInfo).port}`,
    authorization: options.authorization,
    requests,
    script: addRule,
    reset() {
      rules.length = 0
      requests.length = 0
    },
    async close() {
      for (const socket of sockets) socket.destroy()
      await Promise.all([
        new Promise<void>((resolve) => server.close(() => resolve())),
        new Promise<void>((resolve) => control.close(() => resolve())),
      ])
    },
  }
}
