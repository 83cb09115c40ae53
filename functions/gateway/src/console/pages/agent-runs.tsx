/**
 * Agent runs: look a run up by id (a run belongs to the credential that started it; there is no
 * per-workspace index to list), see its state and usage against its caps, cancel it while it runs.
 * A client of /svc/agents/runs/{id}.
 */
import type { Hono } from 'hono'
import { Field, type Flash, FlashNotice, PostAction } from '../components'
import { type ConsoleApp, type ConsoleContext, frameOf, html } from '../console.app'
import { Frame, formatDate, formatNumber, Notice } from '../layout'

interface Run {
  id: string
  state: string
  model: string
  mode: string
  test_mode: boolean
  created_at: string
  updated_at: string
  turn_count: number
  last_seq: number
  last_turn: { turn_id: string; state: string; stop_reason: string | null } | null
  pending_approvals: { approval_id: string; tool_name: string; expires_at: string }[]
  usage: { total_tokens?: number; cost_usd: number }
  limits: {
    max_total_tokens: number
    remaining_tokens: number
    max_cost_usd: number
    remaining_cost_usd: number
  }
}

const TERMINAL = new Set(['completed', 'failed', 'cancelled'])
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

async function renderRun(c: ConsoleContext, runId: string, notice?: Flash) {
  const frame = await frameOf(c, 'Agent runs', 'agent-runs')
  const found = runId ? await c.get('api').get<Run>(`/svc/agents/runs/${encodeURIComponent(runId)}`) : null
  const run = found?.ok ? found.body : null
  return html(
    c,
    <Frame frame={frame}>
      <h1>Agent runs</h1>
      <p class="lead">
        A run belongs to the credential that started it (its <code>run_id</code> is in the turn's events):
        here you find the runs you started with your own login, as the agent CLI does. Look one up to see its
        state and usage, and cancel it while it runs.
      </p>
      <FlashNotice flash={notice} />
      <form method="get" action="/console/agent-runs" class="filters" aria-label="Find a run">
        <Field id="run_id" label="Run id">
          <input id="run_id" name="run_id" type="text" value={runId} required pattern="[0-9a-fA-F-]{36}" />
        </Field>
        <button type="submit" class="secondary">
          Look up
        </button>
      </form>
      {found && !found.ok ? (
        <Notice kind="error">
          {found.status === 404 ? 'No such run for this account.' : found.error.message}
        </Notice>
      ) : null}
      {run ? (
        <section class="panel" aria-labelledby="run-h">
          <h2 id="run-h">
            Run <code>{run.id}</code>
          </h2>
          <dl class="facts">
            <dt>State</dt>
            <dd>
              <span class={`badge ${TERMINAL.has(run.state) ? 'expired' : 'active'}`}>{run.state}</span>
            </dd>
            <dt>Model and mode</dt>
            <dd>
              {run.model} · {run.mode} {run.test_mode ? '(test key)' : ''}
            </dd>
            <dt>Turns</dt>
            <dd>
              {run.turn_count}
              {run.last_turn
                ? ` · last ${run.last_turn.state}${run.last_turn.stop_reason ? ` (${run.last_turn.stop_reason})` : ''}`
                : ''}
            </dd>
            <dt>Tokens</dt>
            <dd>
              {formatNumber(run.limits.max_total_tokens - run.limits.remaining_tokens)} of{' '}
              {formatNumber(run.limits.max_total_tokens)}
            </dd>
            <dt>Cost</dt>
            <dd>
              ${run.usage.cost_usd.toFixed(4)} of ${run.limits.max_cost_usd}
            </dd>
            <dt>Pending approvals</dt>
            <dd>
              {run.pending_approvals
                .map((a) => `${a.tool_name} (until ${formatDate(a.expires_at)})`)
                .join(', ') || 'none'}
            </dd>
            <dt>Updated</dt>
            <dd>{formatDate(run.updated_at)}</dd>
          </dl>
          {TERMINAL.has(run.state) ? null : (
            <div class="form-actions">
              <PostAction
                action={`/console/agent-runs/${run.id}/cancel`}
                csrf={frame.csrf}
                label="Cancel run"
                kind="danger"
                small={false}
                confirm="Cancel this run? The running turn stops."
              />
            </div>
          )}
        </section>
      ) : null}
    </Frame>,
  )
}

export function agentRunPages(app: Hono<ConsoleApp>): void {
  app.get('/agent-runs', (c) => {
    const runId = (c.req.query('run_id') ?? '').trim()
    return renderRun(
      c,
      UUID.test(runId) ? runId : '',
      runId && !UUID.test(runId) ? { kind: 'error', text: 'A run id is a UUID.' } : undefined,
    )
  })

  app.post('/agent-runs/:id/cancel', async (c) => {
    const id = c.req.param('id')
    const cancelled = await c.get('api').send('DELETE', `/svc/agents/runs/${encodeURIComponent(id)}`)
    return renderRun(
      c,
      UUID.test(id) ? id : '',
      cancelled.ok
        ? { kind: 'ok', text: 'Run cancelled.' }
        : { kind: 'error', text: cancelled.error.message },
    )
  })
}
