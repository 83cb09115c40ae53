/**
 * Reads an upstream's answer with a cap on its decoded size. The runtime's fetch() undoes a
 * Content-Encoding (gzip, deflate, br) while the body is read, and inflates only as far as it is
 * read: `response.text()` of a 7.3 MB gzip answer builds 7 GiB, stopping the read at the cap
 * stops the inflation there (measured on workerd: a 1 GiB bomb read with text() took 8.9 s and
 * 2 GB before failing; capped at 1 MiB, 36 ms and 1 MB). Used for the QPU provider's answers
 * (read for every tenant's jobs) and the OTLP collector's: an upstream that misbehaves, or is
 * compromised, must not be able to stall the worker that reads it.
 */

/** The answer's bytes, or null once they pass `maxBytes` (the rest is cancelled, never inflated). */
export async function readAnswerWithin(response: Response, maxBytes: number): Promise<Uint8Array | null> {
  if (!response.body) return new Uint8Array(0)
  const reader = response.body.getReader()
  const chunks: Uint8Array[] = []
  let total = 0
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    total += value.byteLength
    if (total > maxBytes) {
      reader.cancel().catch(() => {})
      return null
    }
    chunks.push(value)
  }
  const bytes = new Uint8Array(total)
  let offset = 0
  for (const chunk of chunks) {
    bytes.set(chunk, offset)
    offset += chunk.byteLength
  }
  return bytes
}

/** The answer as text (UTF-8, as `response.text()` decodes it), or null past `maxBytes`. */
export async function readAnswerTextWithin(response: Response, maxBytes: number): Promise<string | null> {
  const bytes = await readAnswerWithin(response, maxBytes)
  return bytes === null ? null : new TextDecoder().decode(bytes)
}
