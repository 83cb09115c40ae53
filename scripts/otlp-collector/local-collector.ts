/**
 * The local OTLP collector `npm start` runs when OTLP_COLLECTOR_URL is not set: the telemetry
 * family's default destination, as the simulated model and the built-in search index are the
 * defaults of theirs. It stands in for an OpenTelemetry Collector with an OTLP/HTTP receiver, the
 * `resource/svc` processor of deploy/otel-collector.yaml and a file exporter, on a free loopback
 * port, and keeps what it receives under DATA_DIR/telemetry:
 *
 *   traces.jsonl, metrics.jsonl, logs.jsonl   one line per export, OTLP JSON (Export…ServiceRequest)
 *   <signal>.1.jsonl … <signal>.3.jsonl       rotated at 16 MiB, the oldest beyond 3 deleted
 *
 * which is what the Collector's file exporter writes (`exporters: file: path: …/traces.jsonl`,
 * rotation on), so the files can be read back with `jq`, replayed by the Collector's
 * `otlpjsonfile` receiver, or tailed while an SDK sends.
 *
 * Wire behaviour (the OTLP/HTTP receiver's, for what the product forwards): POST /v1/traces,
 * /v1/metrics, /v1/logs (else 404; other methods 405); Content-Type application/x-protobuf or
 * application/json (else 415); Content-Encoding gzip, deflate or none (else 400); a body over
 * 8 MiB, compressed or not, 413; a body that is not the signal's Export request 400 with a
 * google.rpc.Status in the request's encoding; else 200 with an empty Export…ServiceResponse in
 * the request's encoding, after the line is written. The tenant and placement headers the receiver
 * sets become resource attributes as the production collector's configuration makes them:
 * `svc.tenant_id` and `cloud.region` upserted, `deployment.environment` inserted when the emitter
 * set none. An export with no resource in it (the receiver's status probe sends an empty one) is
 * acknowledged and not written.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo, Socket } from 'node:net'
import path from 'node:path'
import { gunzipSync, inflateSync } from 'node:zlib'
import { BinaryWriter, WireType } from '@bufbuild/protobuf/wire'
import {
  canonicalOtlpJson,
  type Json,
  type JsonObject,
  type MessageName,
  OtlpBodyError,
  protobufToOtlpJson,
} from './otlp-json.ts'
import { RotatingJsonLines } from './rotating-file.ts'

export type Signal = 'traces' | 'metrics' | 'logs'

const SIGNALS: Record<string, { signal: Signal; message: MessageName; resources: string }> = {
  '/v1/traces': { signal: 'traces', message: 'ExportTraceServiceRequest', resources: 'resourceSpans' },
  '/v1/metrics': { signal: 'metrics', message: 'ExportMetricsServiceRequest', resources: 'resourceMetrics' },
  '/v1/logs': { signal: 'logs', message: 'ExportLogsServiceRequest', resources: 'resourceLogs' },
}

/** The receiver's own limit (deploy/otel-collector.yaml: max_request_body_size), before and after decompression. */
export const MAX_BODY_BYTES = 8 * 1024 * 1024
export const DEFAULT_FILE_BYTES = 16 * 1024 * 1024
export const DEFAULT_ROTATED_FILES = 3

/** Headers the product's receiver sets → the resource attribute each becomes, and how. */
const RESOURCE_HEADERS = [
  { header: 'x-svc-tenant-id', attribute: 'svc.tenant_id', action: 'upsert' },
  { header: 'x-svc-cloud-region', attribute: 'cloud.region', action: 'upsert' },
  { header: 'x-svc-deployment-environment', attribute: 'deployment.environment', action: 'insert' },
] as const

export interface LocalCollectorOptions {
  dataDir: string
  host?: string
  port?: number
  maxFileBytes?: number
  rotatedFiles?: number
}

export interface LocalCollector {
  /** The base URL to give the receiver as OTLP_COLLECTOR_URL. */
  url: string
  /** DATA_DIR/telemetry */
  dir: string
  /** The file each signal is written to now. */
  files: Record<Signal, string>
  close(): Promise<void>
}

/** An export refused: the HTTP status, and the google.rpc.Code of the Status body. */
class Refusal extends Error {
  readonly status: number
  readonly code: number
  constructor(status: number, code: number, message: string) {
    super(message)
    this.status = status
    this.code = code
  }
}

/** google.rpc.Status { int32 code = 1; string message = 2 } in the request's encoding. */
function statusBody(
  json: boolean,
  code: number,
  message: string,
): { type: string; body: Uint8Array | string } {
  if (json) return { type: 'application/json', body: JSON.stringify({ code, message }) }
  const writer = new BinaryWriter()
  writer.tag(1, WireType.Varint).int32(code).tag(2, WireType.LengthDelimited).string(message)
  return { type: 'application/x-protobuf', body: writer.finish() }
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const declared = Number(req.headers['content-length'] ?? 0)
  if (declared > MAX_BODY_BYTES) throw new Refusal(413, 8, `the body is over ${MAX_BODY_BYTES} bytes`)
  const chunks: Buffer[] = []
  let size = 0
  for await (const chunk of req) {
    size += (chunk as Buffer).length
    if (size > MAX_BODY_BYTES) throw new Refusal(413, 8, `the body is over ${MAX_BODY_BYTES} bytes`)
    chunks.push(chunk as Buffer)
  }
  return Buffer.concat(chunks)
}

function decompress(body: Buffer, header: string | undefined): Buffer {
  const encoding = (header ?? '').trim().toLowerCase()
  if (encoding === '' || encoding === 'identity') return body
  if (encoding !== 'gzip' && encoding !== 'deflate') {
    throw new Refusal(400, 3, `unsupported Content-Encoding ${encoding}; use gzip or deflate`)
  }
  try {
    const options = { maxOutputLength: MAX_BODY_BYTES }
    return encoding === 'gzip' ? gunzipSync(body, options) : inflateSync(body, options)
  } catch (err) {
    if (err instanceof RangeError || (err as { code?: string }).code === 'ERR_BUFFER_TOO_LARGE') {
      throw new Refusal(413, 8, `the body is over ${MAX_BODY_BYTES} bytes once decompressed`)
    }
    throw new Refusal(400, 3, `the ${encoding} body cannot be decompressed: ${(err as Error).message}`)
  }
}

function decode(bytes: Buffer, json: boolean, message: MessageName): JsonObject {
  try {
    if (!json) return protobufToOtlpJson(bytes, message)
    let parsed: Json
    try {
      parsed = JSON.parse(bytes.toString('utf8')) as Json
    } catch (err) {
      throw new OtlpBodyError(`the body is not JSON: ${(err as Error).message}`)
    }
    return canonicalOtlpJson(parsed, message)
  } catch (err) {
    if (err instanceof OtlpBodyError)
      throw new Refusal(400, 3, `failed to unmarshal request body: ${err.message}`)
    throw err
  }
}

/** deploy/otel-collector.yaml's `resource/svc` processor, on one export. */
function addResourceAttributes(
  exported: JsonObject,
  resourcesKey: string,
  headers: IncomingMessage['headers'],
) {
  const resources = exported[resourcesKey]
  if (!Array.isArray(resources)) return
  for (const entry of resources as JsonObject[]) {
    const resource = (entry.resource ?? {}) as JsonObject
    const attributes = [...((resource.attributes ?? []) as JsonObject[])]
    for (const { header, attribute, action } of RESOURCE_HEADERS) {
      const value = headers[header]
      if (typeof value !== 'string' || value === '') continue
      const at = attributes.findIndex((a) => a.key === attribute)
      const kv = { key: attribute, value: { stringValue: value } }
      if (at < 0) attributes.push(kv)
      else if (action === 'upsert') attributes[at] = kv
    }
    if (attributes.length === 0) continue
    const { attributes: _, ...rest } = resource
    entry.resource = { attributes, ...rest }
  }
}

export async function startLocalCollector(options: LocalCollectorOptions): Promise<LocalCollector> {
  const dir = path.join(options.dataDir, 'telemetry')
  const limits = {
    maxBytes: options.maxFileBytes ?? DEFAULT_FILE_BYTES,
    keep: options.rotatedFiles ?? DEFAULT_ROTATED_FILES,
  }
  const files: Record<Signal, RotatingJsonLines> = {
    traces: new RotatingJsonLines(dir, 'traces', limits),
    metrics: new RotatingJsonLines(dir, 'metrics', limits),
    logs: new RotatingJsonLines(dir, 'logs', limits),
  }

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const route = SIGNALS[new URL(req.url ?? '/', 'http://collector').pathname]
    if (!route) return res.writeHead(404, { 'content-type': 'text/plain' }).end('404 page not found')
    if (req.method !== 'POST') {
      return res
        .writeHead(405, { 'content-type': 'text/plain', allow: 'POST' })
        .end('405 method not allowed, supported: [POST]')
    }
    const type = (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase()
    const json = type === 'application/json'
    if (!json && type !== 'application/x-protobuf') {
      req.resume()
      return res
        .writeHead(415, { 'content-type': 'text/plain' })
        .end('415 unsupported media type, supported: [application/json, application/x-protobuf]')
    }
    try {
      const body = decompress(await readBody(req), req.headers['content-encoding'])
      const exported = decode(body, json, route.message)
      const resources = exported[route.resources]
      if (Array.isArray(resources) && resources.length > 0) {
        addResourceAttributes(exported, route.resources, req.headers)
        files[route.signal].append(JSON.stringify(exported))
      }
    } catch (err) {
      if (!(err instanceof Refusal)) throw err
      const refusal = statusBody(json, err.code, err.message)
      return res
        .writeHead(err.status, { 'content-type': refusal.type, connection: 'close' })
        .end(refusal.body)
    }
    // An empty Export…ServiceResponse: no partial success.
    return json
      ? res.writeHead(200, { 'content-type': 'application/json' }).end('{}')
      : res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end()
  }

  const sockets = new Set<Socket>()
  const server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      // A write that failed (disk full…): the export was not kept, so it is not acknowledged.
      if (!res.headersSent) {
        res.writeHead(503, { 'content-type': 'text/plain', 'retry-after': '1' }).end(String(err))
      } else res.destroy()
    })
  })
  server.on('connection', (socket) => {
    sockets.add(socket)
    socket.on('close', () => sockets.delete(socket))
  })
  const host = options.host ?? '127.0.0.1'
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(options.port ?? 0, host, () => resolve())
  })
  const { port } = server.address() as AddressInfo
  return {
    url: `http://${host.includes(':') ? `[${host}]` : host}:${port}`,
    dir,
    files: { traces: files.traces.current, metrics: files.metrics.current, logs: files.logs.current },
    async close() {
      for (const socket of sockets) socket.destroy()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}
