/**
 * The workspace CLI against a running stack with its own DATA_DIR, as a developer uses it: help
 * without a stack, a clear answer when DATA_DIR holds none, and `set-plan` opening what the
 * development plan does not include (svc-swarm is an enterprise model).
 */
import { execFile } from 'node:child_process'
import { mkdtempSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'
import { describe, expect, it } from 'vitest'
import { ROOT } from '../../scripts/workers.ts'
import { chat, createWorkspace, stack } from './chat-fixtures.ts'

const run = promisify(execFile)
const TSX = path.join(ROOT, 'node_modules', '.bin', 'tsx')

async function workspaceCli(args: string[], env: Record<string, string>) {
  try {
    const { stdout, stderr } = await run(TSX, ['scripts/workspace.ts', ...args], {
      cwd: ROOT,
      env: { ...process.env, DATABASE_URL: '', ...env },
    })
    return { code: 0, stdout, stderr }
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string }
    return { code: e.code, stdout: e.stdout, stderr: e.stderr }
  }
}

describe(`workspace CLI (${stack.kind})`, () => {
  it('prints its commands for --help without needing a stack', async () => {
    const empty = mkdtempSync(path.join(os.tmpdir(), 'svc-no-stack-'))
    const help = await workspaceCli(['--help'], { DATA_DIR: empty })
    expect(help.code).toBe(0)
    expect(help.stdout).toMatch(/set-plan --plan free\|pro\|team\|enterprise/)
    expect(help.stdout).toMatch(/create-key --tenant/)
  })

  it('names the DATA_DIR that holds no stack', async () => {
    const empty = mkdtempSync(path.join(os.tmpdir(), 'svc-no-stack-'))
    const result = await workspaceCli(['list-keys', '--tenant', crypto.randomUUID()], { DATA_DIR: empty })
    expect(result.code).toBe(1)
    expect(result.stderr).toContain(`No running stack in DATA_DIR=${empty}`)
  })

  it('set-plan moves a workspace to a plan that includes svc-swarm', async () => {
    const workspace = await createWorkspace('team')
    const body = { model: 'svc-swarm', messages: [{ role: 'user', content: 'hello' }], max_tokens: 8 }
    // The live key sees the team plan's refusal (and is cached with it); the test key is first used after.
    const refused = await chat(workspace.liveKey, body)
    expect(refused.status).toBe(403)
    expect(((await refused.json()) as { svc_upgrade: { reason: string } }).svc_upgrade.reason).toBe(
      'model_access_required',
    )

    const result = await workspaceCli(['set-plan', '--plan', 'enterprise', '--tenant', workspace.tenantId], {
      DATA_DIR: stack.dataDir,
    })
    expect(result.code, result.stderr).toBe(0)
    expect(JSON.parse(result.stdout)).toMatchObject({ tenantId: workspace.tenantId, plan: 'enterprise' })

    const allowed = await chat(workspace.testKey, body)
    expect(allowed.status).toBe(200)
  })

  it('set-plan refuses a plan the catalog does not have', async () => {
    const result = await workspaceCli(['set-plan', '--plan', 'platinum', '--tenant', crypto.randomUUID()], {
      DATA_DIR: stack.dataDir,
    })
    expect(result.code).toBe(1)
    expect(result.stderr).toMatch(/--plan must be one of free, pro, team, enterprise/)
  })
})
