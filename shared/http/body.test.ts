import { describe, expect, it } from 'vitest'
import { readBodyText, readJsonText } from './body'
import { AppError } from './errors'

const encode = (text: string) => new TextEncoder().encode(text)
const invalid = new Uint8Array([...encode('{"a":"x'), 0xc3, 0x28, ...encode('"}')])

function declared(bytes: Uint8Array): Request {
  return new Request('https://svc.test/x', {
    method: 'POST',
    headers: { 'content-length': String(bytes.byteLength) },
    body: bytes,
  })
}

function streamed(bytes: Uint8Array): Request {
  return new Request('https://svc.test/x', {
    method: 'POST',
    body: new ReadableStream({
      start(controller) {
        controller.enqueue(bytes.slice(0, 3))
        controller.enqueue(bytes.slice(3))
        controller.close()
      },
    }),
  })
}

async function refusal(promise: Promise<unknown>): Promise<AppError> {
  const err = await promise.then(
    () => null,
    (e: unknown) => e,
  )
  expect(err).toBeInstanceOf(AppError)
  return err as AppError
}

describe('readBodyText', () => {
  it('refuses invalid UTF-8 with 400 naming the byte and its offset, declared length or not', async () => {
    for (const request of [declared(invalid), streamed(invalid)]) {
      const err = await refusal(readBodyText(request, 1024))
      expect(err.status).toBe(400)
      expect(err.code).toBe('invalid_utf8')
      expect(err.message).toContain('byte 0xc3 at offset 7')
    }
    // Overlong forms, encoded surrogates and a sequence cut short at the end are invalid too.
    for (const bytes of [
      [0xc0, 0xaf],
      [0xed, 0xa0, 0x80],
      [0x61, 0xe2, 0x82],
    ]) {
      const err = await refusal(readBodyText(declared(new Uint8Array(bytes)), 1024))
      expect(err.code).toBe('invalid_utf8')
    }
  })

  it('decodes valid multi-byte text as it is (a leading BOM dropped, as before)', async () => {
    const text = '{"a":"café ☕ 😀"}'
    expect(await readBodyText(declared(encode(text)), 1024)).toBe(text)
    expect(await readBodyText(streamed(encode(text)), 1024)).toBe(text)
    expect(await readBodyText(declared(new Uint8Array([0xef, 0xbb, 0xbf, ...encode('{}')])), 1024)).toBe('{}')
  })

  it('still answers 413 beyond the limit, declared or not', async () => {
    const big = encode(`"${'x'.repeat(100)}"`)
    expect((await refusal(readBodyText(declared(big), 64))).status).toBe(413)
    expect((await refusal(readBodyText(streamed(big), 64))).status).toBe(413)
  })
})

describe('readJsonText', () => {
  it('holds the text to the JSON input rules', async () => {
    const err = await refusal(readJsonText(declared(encode('{"z":"\\ud800"}')), 1024))
    expect(err).toMatchObject({ status: 400, code: 'invalid_character', param: 'z' })
    expect(await readJsonText(declared(encode('{"z":"ok"}')), 1024)).toBe('{"z":"ok"}')
  })
})
