/**
 * The OTLP decoders (protobuf and JSON) and the body reader, inside workerd: what they count, what
 * they refuse and where they say it went wrong; every truncation of a valid request is refused.
 */
import { BinaryWriter, WireType } from '@bufbuild/protobuf/wire'
import { describe, expect, it } from 'vitest'
import { AppError } from '../../../../shared/http/errors'
import { frame, unframe } from './grpc'
import { countJsonItems, rejectedInJsonResponse } from './otlp-json'
import { countProtobufItems, OtlpDecodeError, rejectedInProtobufResponse } from './otlp-protobuf'
import { decompress, readRawBody } from './request-body'

const TRACE_ID = new Uint8Array(16).fill(1)
const SPAN_ID = new Uint8Array(8).fill(2)

function span(w: BinaryWriter, name: string, traceId: Uint8Array = TRACE_ID): void {
  w.tag(2, WireType.LengthDelimited).fork()
  w.tag(1, WireType.LengthDelimited).bytes(traceId)
  w.tag(2, WireType.LengthDelimited).bytes(SPAN_ID)
  w.tag(5, WireType.LengthDelimited).string(name)
  w.tag(7, WireType.Bit64).fixed64(1n)
  // an attribute with a nested AnyValue
  w.tag(9, WireType.LengthDelimited).fork()
  w.tag(1, WireType.LengthDelimited).string('http.method')
  w.tag(2, WireType.LengthDelimited).fork().tag(1, WireType.LengthDelimited).string('GET').join()
  w.join()
  w.join()
}

/** ExportTraceServiceRequest with `perScope` spans in each of two scopes of one resource. */
function traces(perScope: number, options: { traceId?: Uint8Array; name?: Uint8Array } = {}): Uint8Array {
  const w = new BinaryWriter()
  w.tag(1, WireType.LengthDelimited).fork()
  w.tag(1, WireType.LengthDelimited).fork() // resource
  w.tag(1, WireType.LengthDelimited).fork().tag(1, WireType.LengthDelimited).string('service.name').join()
  w.join()
  for (let s = 0; s < 2; s++) {
    w.tag(2, WireType.LengthDelimited).fork()
    for (let i = 0; i < perScope; i++) span(w, `span ${i}`, options.traceId)
    if (options.name) {
      w.tag(2, WireType.LengthDelimited).fork().tag(5, WireType.LengthDelimited).bytes(options.name).join()
    }
    w.join()
  }
  w.join()
  return w.finish()
}

const expectDecodeError = (fn: () => unknown, path: RegExp) => {
  try {
    fn()
  } catch (err) {
    expect(err).toBeInstanceOf(OtlpDecodeError)
    expect((err as OtlpDecodeError).path).toMatch(path)
    return
  }
  throw new Error('expected an OtlpDecodeError')
}

describe('protobuf', () => {
  it('counts spans across scopes and resources; an empty request is zero', () => {
    expect(countProtobufItems(traces(3), 'ExportTraceServiceRequest')).toBe(6)
    expect(countProtobufItems(new Uint8Array(0), 'ExportTraceServiceRequest')).toBe(0)
  })

  it('refuses every truncation of a valid request', () => {
    const whole = traces(2)
    for (let n = 1; n < whole.length; n++) {
      const cut = whole.subarray(0, n)
      let refused = false
      try {
        countProtobufItems(cut, 'ExportTraceServiceRequest')
      } catch (err) {
        refused = err instanceof OtlpDecodeError
      }
      expect(refused, `cut at ${n} of ${whole.length}`).toBe(true)
    }
  })

  it('names the field: a trace id of the wrong length, a string that is not UTF-8', () => {
    expectDecodeError(
      () => countProtobufItems(traces(1, { traceId: new Uint8Array(5) }), 'ExportTraceServiceRequest'),
      /^resource_spans\[0\]\.scope_spans\[0\]\.spans\[0\]\.trace_id$/,
    )
    expectDecodeError(
      () =>
        countProtobufItems(traces(1, { name: new Uint8Array([0xc3, 0x28]) }), 'ExportTraceServiceRequest'),
      /spans\[1\]\.name$/,
    )
  })

  it('skips unknown fields and fields of another wire type, as protobuf decoders do', () => {
    const w = new BinaryWriter()
    w.tag(99, WireType.Varint).uint32(5)
    w.tag(1, WireType.Varint).uint32(7) // resource_spans as a varint: unknown, skipped
    w.raw(traces(1))
    expect(countProtobufItems(w.finish(), 'ExportTraceServiceRequest')).toBe(2)
  })

  it('refuses garbage and nesting past the limit', () => {
    expectDecodeError(
      () => countProtobufItems(new TextEncoder().encode('hello world'), 'ExportTraceServiceRequest'),
      /./,
    )
    // kvlist_value → KeyValue → value → kvlist_value ... 200 levels deep, inside a log body
    let inner = new Uint8Array(0)
    for (let i = 0; i < 200; i++) {
      const w = new BinaryWriter()
      w.tag(6, WireType.LengthDelimited).fork() // AnyValue.kvlist_value
      w.tag(1, WireType.LengthDelimited).fork().tag(2, WireType.LengthDelimited).bytes(inner).join()
      w.join()
      inner = w.finish()
    }
    const w = new BinaryWriter()
    w.tag(1, WireType.LengthDelimited).fork().tag(2, WireType.LengthDelimited).fork()
    w.tag(2, WireType.LengthDelimited).fork().tag(5, WireType.LengthDelimited).bytes(inner).join()
    w.join().join()
    expect(() => countProtobufItems(w.finish(), 'ExportLogsServiceRequest')).toThrow(/nested more than 64/)
  })

  it('counts metric data points of every kind', () => {
    const w = new BinaryWriter()
    w.tag(1, WireType.LengthDelimited).fork().tag(2, WireType.LengthDelimited).fork()
    // a gauge with 2 points, a histogram with 1 (packed bucket counts), a summary with 3
    w.tag(2, WireType.LengthDelimited).fork().tag(5, WireType.LengthDelimited).fork()
    for (let i = 0; i < 2; i++)
      w.tag(1, WireType.LengthDelimited).fork().tag(4, WireType.Bit64).double(1.5).join()
    w.join().join()
    w.tag(2, WireType.LengthDelimited).fork().tag(9, WireType.LengthDelimited).fork()
    w.tag(1, WireType.LengthDelimited).fork()
    w.tag(6, WireType.LengthDelimited).fork().fixed64(1n).fixed64(2n).join()
    w.join().join().join()
    w.tag(2, WireType.LengthDelimited).fork().tag(11, WireType.LengthDelimited).fork()
    for (let i = 0; i < 3; i++) w.tag(1, WireType.LengthDelimited).fork().join()
    w.join().join()
    w.join().join()
    expect(countProtobufItems(w.finish(), 'ExportMetricsServiceRequest')).toBe(6)
  })

  it('reads the rejected count of a partial success', () => {
    const w = new BinaryWriter()
    w.tag(1, WireType.LengthDelimited)
      .fork()
      .tag(1, WireType.Varint)
      .int64(3)
      .tag(2, WireType.LengthDelimited)
      .string('old')
      .join()
    expect(rejectedInProtobufResponse(w.finish())).toEqual({ rejected: 3, message: 'old' })
    expect(rejectedInProtobufResponse(new Uint8Array(0))).toEqual({ rejected: 0, message: '' })
  })
})

describe('OTLP JSON', () => {
  const request = {
    resourceSpans: [
      {
        resource: { attributes: [{ key: 'service.name', value: { stringValue: 'x' } }] },
        scopeSpans: [
          {
            spans: [
              {
                traceId: '0102030405060708090a0b0c0d0e0f10',
                spanId: '0102030405060708',
                name: 'a',
                startTimeUnixNano: '1',
              },
              { trace_id: '', span_id: '', name: 'b', kind: 2 },
            ],
          },
        ],
      },
    ],
    unknownField: { anything: true },
  }

  it('counts spans, accepting snake_case keys and ignoring unknown ones', () => {
    expect(countJsonItems(request, 'ExportTraceServiceRequest')).toBe(2)
    expect(countJsonItems({}, 'ExportTraceServiceRequest')).toBe(0)
  })

  it('refuses wrong shapes, naming the path', () => {
    expectDecodeError(() => countJsonItems([], 'ExportTraceServiceRequest'), /top level/)
    expectDecodeError(
      () => countJsonItems({ resourceSpans: {} }, 'ExportTraceServiceRequest'),
      /^resourceSpans$/,
    )
    expectDecodeError(
      () =>
        countJsonItems(
          { resourceSpans: [{ scopeSpans: [{ spans: [{ spanId: 'zz' }] }] }] },
          'ExportTraceServiceRequest',
        ),
      /^resourceSpans\[0\]\.scopeSpans\[0\]\.spans\[0\]\.spanId$/,
    )
    expectDecodeError(
      () =>
        countJsonItems(
          { resourceLogs: [{ scopeLogs: [{ logRecords: [{ severityNumber: 'high' }] }] }] },
          'ExportLogsServiceRequest',
        ),
      /severityNumber$/,
    )
  })

  it('reads partialSuccess', () => {
    expect(rejectedInJsonResponse('{"partialSuccess":{"rejectedSpans":"4","errorMessage":"m"}}')).toEqual({
      rejected: 4,
      message: 'm',
    })
    expect(rejectedInJsonResponse('{}')).toEqual({ rejected: 0, message: '' })
  })
})

async function gzip(bytes: Uint8Array, format: 'gzip' | 'deflate' = 'gzip'): Promise<Uint8Array> {
  const stream = new Response(bytes).body!.pipeThrough(new CompressionStream(format))
  return new Uint8Array(await new Response(stream).arrayBuffer())
}

const statusOf = async (run: () => unknown) => {
  try {
    await run()
  } catch (err) {
    return err instanceof AppError ? `${err.status} ${err.code}` : String(err)
  }
  return 'ok'
}

describe('body and compression', () => {
  it('decompresses within the limit and refuses past it (413), corrupt or cut short (400)', async () => {
    const payload = new Uint8Array(10_000).fill(7)
    const packed = await gzip(payload)
    expect(decompress(packed, 'gzip', 10_000)).toEqual(payload)
    expect(await statusOf(() => decompress(packed, 'gzip', 9_999))).toBe('413 request_too_large')
    expect(await statusOf(() => decompress(packed.subarray(0, packed.length - 8), 'gzip', 10_000))).toBe(
      '400 invalid_content_encoding',
    )
    expect(await statusOf(() => decompress(new Uint8Array([1, 2, 3, 4]), 'deflate', 10_000))).toBe(
      '400 invalid_content_encoding',
    )
  })

  it('Content-Encoding: deflate (HTTP deflate, the zlib format) within the same limit; identity as is', async () => {
    const payload = new Uint8Array(10_000).fill(9)
    const packed = await gzip(payload, 'deflate')
    expect(decompress(packed, 'deflate', 10_000)).toEqual(payload)
    expect(await statusOf(() => decompress(packed, 'deflate', 9_999))).toBe('413 request_too_large')
    // identity: the bytes as read (readRawBody already held them to the limit).
    expect(decompress(payload, 'identity', 10_000)).toBe(payload)
  })

  it('takes exactly the limit after decompression and refuses one byte more, in both encodings', async () => {
    // 64 KiB and 64 KiB + 1 are where workerd's zlib, capped at exactly the limit, refuses an
    // output of exactly the limit (it grows its buffer a 64 KiB chunk at a time).
    for (const limit of [64 * 1024, 64 * 1024 + 1, 8 * 1024 * 1024]) {
      for (const format of ['gzip', 'deflate'] as const) {
        const exact = new Uint8Array(limit).fill(1)
        expect(decompress(await gzip(exact, format), format, limit).byteLength).toBe(limit)
        const over = new Uint8Array(limit + 1).fill(1)
        expect(await statusOf(async () => decompress(await gzip(over, format), format, limit))).toBe(
          '413 request_too_large',
        )
      }
    }
  })

  it('stops a bomb early: 64 MiB of zeros against a 1 MiB limit, gzip and deflate', async () => {
    const zeros = new Uint8Array(64 * 1024 * 1024)
    for (const format of ['gzip', 'deflate'] as const) {
      const bomb = await gzip(zeros, format)
      expect(bomb.length).toBeLessThan(200_000)
      expect(await statusOf(() => decompress(bomb, format, 1024 * 1024))).toBe('413 request_too_large')
    }
  })

  it('takes concatenated gzip members (RFC 1952) and refuses trailing bytes that are not one', async () => {
    const one = await gzip(new Uint8Array(100).fill(3))
    expect(decompress(new Uint8Array([...one, ...one]), 'gzip', 1000)).toEqual(new Uint8Array(200).fill(3))
    expect(await statusOf(() => decompress(new Uint8Array([...one, 0x41, 0x42]), 'gzip', 1000))).toBe(
      '400 invalid_content_encoding',
    )
  })

  it('reads a raw body within its limit, refusing a declared length over it before reading', async () => {
    const body = () => new Response(new Uint8Array(100)).body
    expect((await readRawBody(body(), 100)).length).toBe(100)
    expect(await statusOf(() => readRawBody(body(), 99))).toBe('413 request_too_large')
    let pulled = 0
    const unread = new ReadableStream<Uint8Array>({
      pull(controller) {
        pulled++
        controller.enqueue(new Uint8Array(10))
      },
    })
    expect(await statusOf(() => readRawBody(unread, 99, '100'))).toBe('413 request_too_large')
    expect(pulled).toBeLessThanOrEqual(1)
  })
})

describe('gRPC framing', () => {
  it('round-trips one message and refuses anything else', () => {
    const message = traces(1)
    expect(unframe(frame(message))).toEqual({ message, compressed: false })
    const framed = frame(message)
    expect(() => unframe(framed.subarray(0, 4))).toThrow(/5-byte/)
    expect(() => unframe(framed.subarray(0, framed.length - 1))).toThrow(/declares/)
    expect(() => unframe(new Uint8Array([...framed, 0]))).toThrow(/exactly one message/)
    expect(() => unframe(new Uint8Array([2, 0, 0, 0, 0]))).toThrow(/flag/)
  })
})
