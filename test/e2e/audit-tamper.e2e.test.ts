/**
 * What a monitor sees when a log is altered or forked, through the gateway of a real stack. The
 * stack runs on its own data folder so the test can stop it and change what the AuditLog object
 * stored on disk (Miniflare's SQLite, as an operator with disk access could), or copy the whole
 * folder to run two deployments that share a past (a split view). Every check is independent of
 * the product: the RFC 9162 verifier and tree hash written in test/support, sigstore's signed-note
 * verifier and liboqs for the checkpoint signatures. Runs once, on PGlite (vitest.config.ts).
 */
import { cpSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { DatabaseSync } from 'node:sqlite'
import { afterAll, describe, expect, inject, it } from 'vitest'
import * as merkle from '../support/independent-merkle.ts'
import { verifyCosignatureWithLiboqs, verifyNoteWithSigstore } from '../support/independent-signatures.ts'
import { launchStack, type RunningStack } from '../support/stack-process.ts'

interface Checkpoint {
  origin: string
  tree_size: number
  root_hash: string
  note: string
}

const folders: string[] = []
let running: RunningStack | undefined

afterAll(async () => {
  await running?.stop()
  for (const dir of folders) rmSync(dir, { recursive: true, force: true })
})

function folder(name: string): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), `svc-audit-${name}-`))
  folders.push(dir)
  return dir
}

async function start(dataDir: string) {
  running = await launchStack({ dataDir })
  const { baseUrl, credentials } = running
  const call = async <T = Record<string, unknown>>(p: string, init: RequestInit = {}) => {
    const headers = new Headers(init.headers)
    headers.set('authorization', `Bearer ${credentials.liveKey}`)
    if (init.body) headers.set('content-type', 'application/json')
    const response = await fetch(`${baseUrl}${p}`, { ...init, headers })
    const text = await response.text()
    return { status: response.status, body: (text.startsWith('{') ? JSON.parse(text) : text) as T }
  }
  return { call, tenantId: credentials.tenantId }
}

async function stop() {
  await running?.stop()
  running = undefined
}

/** An audited action: a request checked against the policy in audit mode logs its decision. */
const audited = (call: Awaited<ReturnType<typeof start>>['call'], algorithm: string) =>
  call('/platform/v1/crypto/algorithms?type=kem', { headers: { 'x-svc-crypto-algorithms': algorithm } })

/** The log's published keys, then the checkpoint verified with both independent verifiers. */
async function verified(call: Awaited<ReturnType<typeof start>>['call'], checkpoint: Checkpoint) {
  const keys = await call<{ keys: { alg: string; public_key: string; state: string }[] }>(
    '/platform/v1/audit-log/keys',
  )
  const key = (alg: string) =>
    merkle.fromBase64(keys.body.keys.find((k) => k.alg === alg && k.state === 'signing')!.public_key)
  const head = verifyNoteWithSigstore(checkpoint.note, checkpoint.origin, key('EdDSA'))
  expect(
    (await verifyCosignatureWithLiboqs(checkpoint.note, checkpoint.origin, key('ML-DSA-44'))).verified,
  ).toBe(true)
  return { origin: head.origin, size: BigInt(head.logSize), root: new Uint8Array(head.logHash) }
}

/** The tenant's AuditLog object's SQLite file (the platform's log has no tenant). */
function tenantLogFile(dataDir: string, tenantId: string): string {
  const dir = path.join(dataDir, 'miniflare', 'do', 'svc-platform-AuditLog')
  for (const file of readdirSync(dir).filter((f) => /^[0-9a-f]{64}\.sqlite$/.test(f))) {
    const db = new DatabaseSync(path.join(dir, file), { readOnly: true })
    try {
      const row = db.prepare(`SELECT value FROM meta WHERE key = 'log'`).get() as
        | { value: string }
        | undefined
      if (row?.value.includes(tenantId)) return path.join(dir, file)
    } catch {
      // not a log object's file (or no meta yet)
    } finally {
      db.close()
    }
  }
  throw new Error(`no AuditLog file for tenant ${tenantId} in ${dir}`)
}

describe.runIf(inject('stack').kind === 'pglite')(
  'audit log: tampering and forks seen by an independent monitor',
  () => {
    it('a flipped byte on disk fails its proof and the full audit; a flipped node makes the log refuse to sign; two deployments with a shared past sign a fork that the checkpoints expose', {
      timeout: 600_000,
    }, async () => {
      // A common past: a policy change and seven audited decisions, covered by a checkpoint.
      const original = folder('original')
      let stack = await start(original)
      const tenantId = stack.tenantId
      expect(
        (
          await stack.call('/platform/v1/crypto/policy', {
            method: 'PUT',
            body: JSON.stringify({ preset: 'strict', mode: 'audit' }),
          })
        ).status,
      ).toBe(200)
      for (let i = 0; i < 7; i++) expect((await audited(stack.call, 'ecdsa-p256')).status).toBe(200)
      const past = await stack.call<Checkpoint>('/platform/v1/audit-log/checkpoint', { method: 'POST' })
      expect(past.status).toBe(200)
      const trusted = await verified(stack.call, past.body)
      const size = Number(trusted.size)
      expect(size).toBeGreaterThanOrEqual(8)
      await stop()
      const forked = folder('forked')
      const tampered = folder('tampered')
      cpSync(original, forked, { recursive: true })
      cpSync(original, tampered, { recursive: true })

      // 1. Tamper: one byte of a stored entry, and the stored hash of the tree's left perfect
      //    subtree (the node every later root is built on).
      const file = tenantLogFile(tampered, tenantId)
      const db = new DatabaseSync(file)
      const { entry } = db.prepare('SELECT entry FROM entries WHERE idx = 3').get() as { entry: string }
      const flipped = entry.replace(/ecdsa-p256/, 'ecdsa-p257')
      expect(flipped).not.toBe(entry)
      db.prepare('UPDATE entries SET entry = ? WHERE idx = 3').run(flipped)
      const left = db
        .prepare('UPDATE nodes SET hash = randomblob(32) WHERE level = ? AND idx = 0')
        .run(Math.floor(Math.log2(size)))
      expect(left.changes).toBe(1)
      db.close()

      stack = await start(tampered)
      // The proof for entry 3 against the trusted checkpoint no longer verifies.
      const proof = await stack.call<{ entry: string; proof: string[] }>(
        `/platform/v1/audit-log/proofs/inclusion?index=3&tree_size=${size}`,
      )
      expect(proof.status).toBe(200)
      expect(proof.body.entry).toBe(flipped)
      const leaf = await merkle.leafHashOf(new TextEncoder().encode(proof.body.entry))
      expect(
        await merkle.verifyInclusionRfc(
          3n,
          trusted.size,
          leaf,
          proof.body.proof.map(merkle.fromBase64),
          trusted.root,
        ),
      ).toBe(false)
      // A full audit: the tree hash of every served entry is not the signed root.
      const entries = await stack.call<{ data: { entry: string }[] }>(
        `/platform/v1/audit-log/entries?start=0&end=${size}`,
      )
      const leaves = await Promise.all(
        entries.body.data.map((e) => merkle.leafHashOf(new TextEncoder().encode(e.entry))),
      )
      expect(leaves).toHaveLength(size)
      expect(Buffer.from(await merkle.treeHashOf(leaves)).equals(Buffer.from(trusted.root))).toBe(false)
      // The log itself notices its altered tree when it must sign again, and says so.
      expect((await audited(stack.call, 'ecdsa-p256')).status).toBe(200)
      const refused = await stack.call<{ error: { code: string } }>('/platform/v1/audit-log/checkpoint', {
        method: 'POST',
      })
      expect(refused.status).toBe(500)
      expect(refused.body.error.code).toBe('audit_log_inconsistent')
      await stop()

      // 2. Fork: the original and its copy each append a different entry and sign size + 1.
      const heads = []
      for (const [dir, algorithm] of [
        [original, 'ecdsa-p256'],
        [forked, 'rsa-2048'],
      ] as const) {
        stack = await start(dir)
        expect((await audited(stack.call, algorithm)).status).toBe(200)
        const head = await stack.call<Checkpoint>('/platform/v1/audit-log/checkpoint', { method: 'POST' })
        expect(head.status).toBe(200)
        const checked = await verified(stack.call, head.body)
        // Each branch alone looks honest: it is consistent with the trusted past.
        const consistency = await stack.call<{ proof: string[] }>(
          `/platform/v1/audit-log/proofs/consistency?first=${size}&second=${size + 1}`,
        )
        expect(
          await merkle.verifyConsistencyRfc(
            trusted.size,
            checked.size,
            trusted.root,
            checked.root,
            consistency.body.proof.map(merkle.fromBase64),
          ),
        ).toBe(true)
        heads.push(checked)
        await stop()
      }
      // Compared, the two signed checkpoints are the proof of a fork: one origin, one size, two roots.
      expect(heads[0]!.origin).toBe(heads[1]!.origin)
      expect(heads[0]!.size).toBe(BigInt(size + 1))
      expect(heads[1]!.size).toBe(heads[0]!.size)
      expect(Buffer.from(heads[0]!.root).equals(Buffer.from(heads[1]!.root))).toBe(false)
    })
  },
)
