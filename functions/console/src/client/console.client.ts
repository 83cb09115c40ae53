/**
 * The console's only script (served from /console/assets, allowed by `script-src 'self'`; the pages
 * work without it except where noted). It adds:
 * - copy buttons (`data-copy` = the id of the element whose text to copy);
 * - confirmation of dangerous forms (`data-confirm` = the question; on the policy form, only when
 *   enforce mode is chosen);
 * - verification of audit-log inclusion proofs in the browser (`data-verify-index`), with WebCrypto
 *   only and independently of the server's code: the checkpoint's Ed25519 signature against the
 *   log keys published at /platform/v1/audit-log/keys, the entry's leaf hash, and the RFC 9162
 *   inclusion path up to the signed root (docs/audit-log.md, "To verify an inclusion proof").
 */

interface LogKey {
  kid: string
  alg: string
  signature_type: number
  public_key: string
  state: string
}

interface InclusionProof {
  index: number
  tree_size: number
  leaf_hash: string
  entry: string
  proof: string[]
  checkpoint: { origin: string; tree_size: number; root_hash: string; note: string }
}

const encoder = new TextEncoder()

type Bytes = Uint8Array<ArrayBuffer>

function fromBase64(text: string): Bytes {
  return Uint8Array.from(atob(text), (c) => c.charCodeAt(0))
}

function equalBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((byte, i) => byte === b[i])
}

async function sha256(...parts: Uint8Array[]): Promise<Bytes> {
  const length = parts.reduce((n, p) => n + p.length, 0)
  const input = new Uint8Array(length)
  let offset = 0
  for (const part of parts) {
    input.set(part, offset)
    offset += part.length
  }
  return new Uint8Array(await crypto.subtle.digest('SHA-256', input))
}

/** RFC 9162 §2.1.3.2: the root an inclusion path leads to, or null when the path is malformed. */
async function rootFromPath(index: number, size: number, leaf: Bytes, path: Bytes[]): Promise<Bytes | null> {
  if (index >= size) return null
  let fn = index
  let sn = size - 1
  let r = leaf
  for (const p of path) {
    if (sn === 0) return null
    if (fn % 2 === 1 || fn === sn) {
      r = await sha256(new Uint8Array([1]), p, r)
      if (fn % 2 === 0) {
        while (fn % 2 === 0 && fn !== 0) {
          fn >>>= 1
          sn >>>= 1
        }
      }
    } else {
      r = await sha256(new Uint8Array([1]), r, p)
    }
    fn >>>= 1
    sn >>>= 1
  }
  return sn === 0 ? r : null
}

/** Checks the note's Ed25519 line (C2SP signed-note, type 0x01) against the log's published keys. */
async function verifyNote(note: string, keys: LogKey[]): Promise<{ kid: string; body: string[] }> {
  const split = note.indexOf('\n\n')
  if (split < 0) throw new Error('the checkpoint is not a signed note')
  const text = note.slice(0, split + 1)
  const body = text.trimEnd().split('\n')
  const origin = body[0] ?? ''
  const lines = note
    .slice(split + 2)
    .split('\n')
    .filter((l) => l.startsWith('\u2014 '))
  for (const key of keys.filter((k) => k.alg === 'EdDSA')) {
    const publicKey = fromBase64(key.public_key)
    const keyId = (await sha256(encoder.encode(origin), new Uint8Array([0x0a, 0x01]), publicKey)).slice(0, 4)
    for (const line of lines) {
      const [, name, signature] = line.split(' ')
      if (name !== origin || !signature) continue
      const bytes = fromBase64(signature)
      if (!equalBytes(bytes.slice(0, 4), keyId)) continue
      const verifier = await crypto.subtle.importKey('raw', publicKey, { name: 'Ed25519' }, false, ['verify'])
      if (await crypto.subtle.verify({ name: 'Ed25519' }, verifier, bytes.slice(4), encoder.encode(text))) {
        return { kid: key.kid, body }
      }
      throw new Error(`the Ed25519 signature of key ${key.kid} does not verify`)
    }
  }
  throw new Error('no signature line by a published Ed25519 log key')
}

async function verifyInclusion(index: number, expectedRequestId: string | undefined): Promise<string> {
  const [proofRes, keysRes] = await Promise.all([
    fetch(`/console/api/audit-log/proof?index=${index}`, { credentials: 'same-origin' }),
    fetch('/platform/v1/audit-log/keys'),
  ])
  if (!proofRes.ok) throw new Error(`the proof could not be fetched (HTTP ${proofRes.status})`)
  if (!keysRes.ok) throw new Error(`the log keys could not be fetched (HTTP ${keysRes.status})`)
  const proof = (await proofRes.json()) as InclusionProof
  const { keys } = (await keysRes.json()) as { keys: LogKey[] }

  const { kid, body } = await verifyNote(proof.checkpoint.note, keys)
  const [origin, sizeText, rootText] = body
  const size = Number(sizeText)
  if (size !== proof.tree_size) throw new Error('the signed size is not the size the proof is for')
  const root = fromBase64(rootText ?? '')

  const entry = JSON.parse(proof.entry) as { index: number; log: string; event: { request_id?: string } }
  if (entry.index !== index || entry.log !== origin)
    throw new Error('the entry names another position or log')
  if (expectedRequestId && entry.event.request_id !== expectedRequestId) {
    throw new Error('the logged entry is not the one shown on this page')
  }
  const leaf = await sha256(new Uint8Array([0]), encoder.encode(proof.entry))
  if (!equalBytes(leaf, fromBase64(proof.leaf_hash))) throw new Error("the entry's leaf hash does not match")
  const computed = await rootFromPath(index, size, leaf, proof.proof.map(fromBase64))
  if (!computed || !equalBytes(computed, root))
    throw new Error('the inclusion path does not lead to the signed root')
  return `Verified in this browser: entry ${index} is in the log of ${size} entries whose checkpoint is signed by log key ${kid}.`
}

function setUpVerification(button: HTMLButtonElement): void {
  const output = document.getElementById(button.dataset.output ?? '')
  button.addEventListener('click', async () => {
    const index = Number(button.dataset.verifyIndex)
    button.disabled = true
    if (output) {
      output.textContent = 'Verifying…'
      output.className = 'verify-result'
    }
    try {
      const message = await verifyInclusion(index, button.dataset.requestId)
      if (output) {
        output.textContent = message
        output.className = 'verify-result ok'
      }
      button.dataset.verified = 'true'
    } catch (err) {
      if (output) {
        output.textContent = `Not verified: ${(err as Error).message}.`
        output.className = 'verify-result bad'
      }
      button.dataset.verified = 'false'
    } finally {
      button.disabled = false
    }
  })
}

function setUpCopy(button: HTMLButtonElement): void {
  button.hidden = false
  button.addEventListener('click', async () => {
    const source = document.getElementById(button.dataset.copy ?? '')
    if (!source) return
    await navigator.clipboard.writeText(source.textContent ?? '')
    const status = document.getElementById(button.dataset.status ?? '')
    if (status) status.textContent = 'Copied to the clipboard.'
  })
}

function setUpConfirm(form: HTMLFormElement): void {
  form.addEventListener('submit', (event) => {
    const onlyIf = form.dataset.confirmWhen
    if (onlyIf) {
      const [name, value] = onlyIf.split('=')
      const field = form.elements.namedItem(name ?? '') as RadioNodeList | HTMLInputElement | null
      if (!field || field.value !== value) return
    }
    if (!window.confirm(form.dataset.confirm ?? 'Are you sure?')) event.preventDefault()
  })
}

document.querySelectorAll<HTMLButtonElement>('button[data-copy]').forEach(setUpCopy)
document.querySelectorAll<HTMLFormElement>('form[data-confirm]').forEach(setUpConfirm)
document.querySelectorAll<HTMLButtonElement>('button[data-verify-index]').forEach(setUpVerification)
