/**
 * `npm run workspace -- <command>`: manage workspaces and credentials from the command line
 * (`npm run workspace -- --help` lists the commands). Works against the running local stack (it
 * reads DATA_DIR/runtime.json to reach its database through the bridge, since embedded PGlite
 * belongs to one process; without DATA_DIR it finds the running stack itself,
 * scripts/running-stacks.ts) or any DATABASE_URL (plus DATABASE_WS_PROXY for a non-Neon server).
 */
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { parseArgs } from 'node:util'
import { and, eq, isNull } from 'drizzle-orm'
import WebSocket from 'ws'
import { apiKeySuffix, generateApiKey, hashApiKey } from '../shared/auth/api-keys.ts'
import {
  createServiceAccount,
  listServiceAccounts,
  revokeServiceAccount,
  rotateServiceAccountSecret,
  SERVICE_ACCOUNT_AUDIENCES,
  type ServiceAccountAudience,
} from '../shared/auth/service-accounts.ts'
import { generateSigningKey } from '../shared/crypto/jwk.ts'
import { isJwsAlgorithm, JWS_ALGORITHMS } from '../shared/crypto/jws-algorithms.ts'
import { getPolicyPreset, type PresetName, validatePolicy } from '../shared/crypto-policy/index.ts'
import { saveTenantPolicy } from '../shared/crypto-policy/policy-store.ts'
import { type DatabaseEnv, openDatabase, schema, useWebSocketConstructor } from '../shared/db/client.ts'
import { PLAN_CATALOG } from '../shared/plans/plan-catalog.ts'
import { DevCredentials, ensureWorkspace } from './db/seed.ts'
import { generatePassword, setUserPassword } from './db/user-passwords.ts'
import { locateStackDataDir } from './running-stacks.ts'
import { ROOT } from './workers.ts'

export const USAGE = `usage: npm run workspace -- <command> [options]

  create-workspace --name "Acme" [--plan pro] [--owner owner@acme.test]
  create-key --tenant <uuid> [--mode live|test] [--name "CI key"] [--role owner|admin|member]
  list-keys --tenant <uuid>
  revoke-key --key <full key> | --id <key uuid>
  create-service-account --tenant <uuid> --name "deployer" [--audience internal-service,external-api]
  rotate-service-account --tenant <uuid> --id <service account uuid>
  revoke-service-account --tenant <uuid> --id <service account uuid>
  list-service-accounts --tenant <uuid>
  set-plan --plan ${PLAN_CATALOG.plans.map((p) => p.id).join('|')} [--tenant <uuid>]   (default: the development workspace)
  set-password --email <email> [--password <at least 15 characters>]   (generated when omitted)
  set-crypto-policy --tenant <uuid> --preset default|strict|maximum|government [--mode audit|enforce]
  generate-signing-keys [--alg ML-DSA-65,ML-DSA-87,EdDSA]   (prints a JWT_SIGNING_KEYS value; no database)

Reaches the running local stack (found by itself; with several running, pass the DATA_DIR of one),
or the database at DATABASE_URL (plus DATABASE_WS_PROXY for a server behind the bridge).`

/** Where the database is: DATABASE_URL, or the running stack's bridge (and that stack's data folder). */
export function databaseEnvFromEnvironment(): { database: DatabaseEnv; dataDir: string | null } {
  if (process.env.DATABASE_URL) {
    return {
      database: { DATABASE_URL: process.env.DATABASE_URL, DATABASE_WS_PROXY: process.env.DATABASE_WS_PROXY },
      dataDir: null,
    }
  }
  const dataDir = locateStackDataDir(ROOT, process.env.DATA_DIR)
  const runtime = JSON.parse(readFileSync(path.join(dataDir, 'runtime.json'), 'utf8')) as {
    database: DatabaseEnv
  }
  return { database: runtime.database, dataDir }
}

/** The development workspace of the stack in `dataDir` (the one `npm start` seeded). */
function developmentTenant(dataDir: string | null): string {
  if (!dataDir) throw new Error('--tenant is required with DATABASE_URL (there is no development workspace)')
  const file = path.join(dataDir, 'dev-credentials.json')
  return DevCredentials.parse(JSON.parse(readFileSync(file, 'utf8'))).tenantId
}

const ROLES = ['owner', 'admin', 'member'] as const
const COMMANDS = new Set([
  'create-workspace',
  'create-key',
  'list-keys',
  'revoke-key',
  'create-service-account',
  'rotate-service-account',
  'revoke-service-account',
  'list-service-accounts',
  'set-plan',
  'set-password',
  'set-crypto-policy',
])

async function main(): Promise<void> {
  const [command, ...rest] = process.argv.slice(2)
  if (command === undefined || command === '--help' || command === '-h' || command === 'help') {
    console.log(USAGE)
    return
  }
  const { values } = parseArgs({
    args: rest,
    options: {
      name: { type: 'string' },
      plan: { type: 'string' },
      owner: { type: 'string' },
      tenant: { type: 'string' },
      mode: { type: 'string', default: 'live' },
      role: { type: 'string', default: 'member' },
      key: { type: 'string' },
      id: { type: 'string' },
      audience: { type: 'string', default: 'internal-service' },
      email: { type: 'string' },
      password: { type: 'string' },
      preset: { type: 'string' },
      alg: { type: 'string' },
    },
  })
  if (command === 'generate-signing-keys') {
    const algorithms = (values.alg ?? 'ML-DSA-65,ML-DSA-87,EdDSA').split(',').map((a) => a.trim())
    const unknown = algorithms.filter((a) => !isJwsAlgorithm(a))
    if (unknown.length)
      throw new Error(`--alg takes ${JWS_ALGORITHMS.join(', ')} (got ${unknown.join(', ')})`)
    const keys = []
    for (const alg of algorithms.filter(isJwsAlgorithm))
      keys.push((await generateSigningKey(alg)).exportPrivateJwk())
    console.log(JSON.stringify(keys))
    return
  }
  if (!COMMANDS.has(command)) {
    console.error(`unknown command ${command}\n\n${USAGE}`)
    process.exitCode = 2
    return
  }
  useWebSocketConstructor(WebSocket)
  const located = databaseEnvFromEnvironment()
  const database = openDatabase(located.database, { max: 1 })
  const { db } = database
  try {
    switch (command) {
      case 'create-workspace': {
        if (!values.name) throw new Error('--name is required')
        const liveKey = generateApiKey('live')
        const testKey = generateApiKey('test')
        const { tenantId } = await ensureWorkspace(db, {
          tenantName: values.name,
          planId: values.plan ?? 'free',
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
      case 'create-service-account': {
        if (!values.tenant || !values.name) throw new Error('--tenant and --name are required')
        const audiences = values.audience!.split(',').map((a) => a.trim())
        const unknown = audiences.filter((a) => !(SERVICE_ACCOUNT_AUDIENCES as readonly string[]).includes(a))
        if (unknown.length)
          throw new Error(`--audience takes ${SERVICE_ACCOUNT_AUDIENCES.join(', ')} (got ${unknown})`)
        const { account, secret } = await createServiceAccount(db, {
          tenantId: values.tenant,
          name: values.name,
          audiences: audiences as ServiceAccountAudience[],
          createdBy: 'cli',
        })
        console.log(JSON.stringify({ ...account, secret }, null, 2))
        break
      }
      case 'rotate-service-account': {
        if (!values.tenant || !values.id) throw new Error('--tenant and --id are required')
        const { account, secret } = await rotateServiceAccountSecret(db, values.tenant, values.id)
        console.log(JSON.stringify({ id: account.id, rotated_at: account.rotated_at, secret }, null, 2))
        break
      }
      case 'revoke-service-account': {
        if (!values.tenant || !values.id) throw new Error('--tenant and --id are required')
        const account = await revokeServiceAccount(db, values.tenant, values.id)
        console.log(`revoked ${account.id}`)
        break
      }
      case 'list-service-accounts': {
        if (!values.tenant) throw new Error('--tenant is required')
        console.table(
          (await listServiceAccounts(db, values.tenant)).map((a) => ({
            id: a.id,
            name: a.name,
            audiences: a.audiences.join(','),
            created_at: a.created_at,
            revoked_at: a.revoked_at,
          })),
        )
        break
      }
      case 'set-plan': {
        const plan = PLAN_CATALOG.plans.find((p) => p.id === values.plan)
        if (!plan) {
          throw new Error(`--plan must be one of ${PLAN_CATALOG.plans.map((p) => p.id).join(', ')}`)
        }
        const tenantId = values.tenant ?? developmentTenant(located.dataDir)
        const rows = await db
          .update(schema.tenants)
          .set({ planId: plan.id })
          .where(eq(schema.tenants.id, tenantId))
          .returning({ id: schema.tenants.id, name: schema.tenants.name })
        if (!rows.length) throw new Error(`no workspace ${tenantId}`)
        console.log(JSON.stringify({ tenantId, workspace: rows[0]!.name, plan: plan.id }, null, 2))
        // Credentials are cached by each gateway isolate with the plan they carry.
        console.error(
          `The plan applies to new requests within API_KEY_CACHE_TTL_SECONDS (30 s by default) of this change.`,
        )
        break
      }
      case 'set-password': {
        if (!values.email) throw new Error('--email is required')
        const password = values.password ?? generatePassword()
        const userId = await setUserPassword(db, values.email, password)
        console.log(
          JSON.stringify(
            { userId, email: values.email, password: values.password ? '(as given)' : password },
            null,
            2,
          ),
        )
        break
      }
      case 'set-crypto-policy': {
        if (!values.tenant || !values.preset) throw new Error('--tenant and --preset are required')
        const base = getPolicyPreset(values.preset)
        // --mode defaults to "live" for create-key; here it applies only when given.
        const mode = process.argv.includes('--mode') ? values.mode : base.mode
        if (mode !== 'audit' && mode !== 'enforce') throw new Error('--mode must be audit or enforce')
        const policy = validatePolicy({ ...base, mode })
        const saved = await saveTenantPolicy(db, {
          tenantId: values.tenant,
          policy,
          preset: values.preset.toLowerCase() as PresetName,
          updatedBy: 'cli',
        })
        console.log(
          JSON.stringify(
            { tenantId: saved.tenantId, preset: saved.preset, mode: saved.policy.mode },
            null,
            2,
          ),
        )
        break
      }
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
