/**
 * `npm run workspace -- <command>`: manage workspaces and credentials from the command line.
 * Works against the running local stack (it reads DATA_DIR/runtime.json to reach its database
 * through the bridge, since embedded PGlite belongs to one process) or any DATABASE_URL
 * (plus DATABASE_WS_PROXY for a non-Neon server).
 *
 *   create-workspace --name "Acme" [--plan pro] [--owner owner@acme.test]
 *   create-key --tenant <uuid> [--mode live|test] [--name "CI key"] [--role owner|admin|member]
 *   list-keys --tenant <uuid>
 *   revoke-key --key <full key> | --id <key uuid>
 */
import { existsSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { parseArgs } from 'node:util'
import { and, eq, isNull } from 'drizzle-orm'
import WebSocket from 'ws'
import { apiKeySuffix, generateApiKey, hashApiKey } from '../shared/auth/api-keys.ts'
import { type DatabaseEnv, openDatabase, schema, useWebSocketConstructor } from '../shared/db/client.ts'
import { ensureWorkspace } from './db/seed.ts'
import { ROOT } from './workers.ts'

export function databaseEnvFromEnvironment(): DatabaseEnv {
  if (process.env.DATABASE_URL) {
    return { DATABASE_URL: process.env.DATABASE_URL, DATABASE_WS_PROXY: process.env.DATABASE_WS_PROXY }
  }
  const runtime = path.resolve(ROOT, process.env.DATA_DIR ?? '.data', 'runtime.json')
  if (!existsSync(runtime)) {
    throw new Error(
      'No running stack found (DATA_DIR/runtime.json). Start it with `npm start`, or set DATABASE_URL.',
    )
  }
  return (JSON.parse(readFileSync(runtime, 'utf8')) as { database: DatabaseEnv }).database
}

const ROLES = ['owner', 'admin', 'member'] as const

async function main(): Promise<void> {
  const [command, ...rest] = process.argv.slice(2)
  const { values } = parseArgs({
    args: rest,
    options: {
      name: { type: 'string' },
      plan: { type: 'string', default: 'free' },
      owner: { type: 'string' },
      tenant: { type: 'string' },
      mode: { type: 'string', default: 'live' },
      role: { type: 'string', default: 'member' },
      key: { type: 'string' },
      id: { type: 'string' },
    },
  })
  useWebSocketConstructor(WebSocket)
  const database = openDatabase(databaseEnvFromEnvironment(), { max: 1 })
  const { db } = database
  try {
    switch (command) {
      case 'create-workspace': {
        if (!values.name) throw new Error('--name is required')
        const liveKey = generateApiKey('live')
        const testKey = generateApiKey('test')
        const { tenantId } = await ensureWorkspace(db, {
          tenantName: values.name,
          planId: values.plan!,
          ownerEmail: values.owner ?? `owner+${crypto.randomUUID().slice(0, 8)}@workspace.invalid`,
          keys: [
            { name: 'Owner live key', key: liveKey },
            { name: 'Owner test key', key: testKey },
          ],
        })
        console.log(JSON.stringify({ tenantId, liveKey, testKey }, null, 2))
        break
      }
      case 'create-key': {
        if (!values.tenant) throw new Error('--tenant is required')
        if (values.mode !== 'live' && values.mode !== 'test') throw new Error('--mode must be live or test')
        const role = values.role as (typeof ROLES)[number]
        if (!ROLES.includes(role)) throw new Error(`--role must be one of ${ROLES.join(', ')}`)
        const key = generateApiKey(values.mode)
        const [row] = await db
          .insert(schema.apiKeys)
          .values({
            tenantId: values.tenant,
            name: values.name ?? `${values.mode} key`,
            mode: values.mode,
            keyHash: await hashApiKey(key),
            suffix: apiKeySuffix(key),
            role,
          })
          .returning({ id: schema.apiKeys.id })
        console.log(JSON.stringify({ id: row!.id, key }, null, 2))
        break
      }
      case 'list-keys': {
        if (!values.tenant) throw new Error('--tenant is required')
        const rows = await db
          .select({
            id: schema.apiKeys.id,
            name: schema.apiKeys.name,
            mode: schema.apiKeys.mode,
            role: schema.apiKeys.role,
            suffix: schema.apiKeys.suffix,
            lastUsedAt: schema.apiKeys.lastUsedAt,
            revokedAt: schema.apiKeys.revokedAt,
          })
          .from(schema.apiKeys)
          .where(eq(schema.apiKeys.tenantId, values.tenant))
        console.table(rows.map((r) => ({ ...r, suffix: `…${r.suffix}` })))
        break
      }
      case 'revoke-key': {
        const where = values.key
          ? eq(schema.apiKeys.keyHash, await hashApiKey(values.key))
          : values.id
            ? eq(schema.apiKeys.id, values.id)
            : null
        if (!where) throw new Error('--key or --id is required')
        const rows = await db
          .update(schema.apiKeys)
          .set({ revokedAt: new Date() })
          .where(and(where, isNull(schema.apiKeys.revokedAt)))
          .returning({ id: schema.apiKeys.id })
        console.log(rows.length ? `revoked ${rows[0]!.id}` : 'no active key matched')
        break
      }
      default:
        console.error(
          'usage: npm run workspace -- create-workspace|create-key|list-keys|revoke-key [options]',
        )
        process.exitCode = 2
    }
  } finally {
    await database.close()
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  main().catch((err: unknown) => {
    console.error(err instanceof Error ? err.message : err)
    process.exit(1)
  })
}
