/**
 * Agent runs: the workspace's runs of the current mode (owners and admins: every run; members: the
 * runs they started), newest first, filtered by state, paged; a run's detail with its usage
 * against its caps and pending approvals; cancel a running or waiting one from the list or the
 * detail. Looking a run up by id still works. A client of /platform/v1/agent-runs (the run index
 * each run writes, and the admin cancel), falling back to /svc/agents/runs/{id} for a run the index
 * does not have yet (one started with the signed-in person's own login before the index existed).
 */

import type { Hono } from 'hono'
import { RUN_STATES } from '../../../../durable-objects/agent-run/agent-events'
import type { RunStatus } from '../../../../durable-objects/agent-run/run-status.schemas'
import { UUID } from '../../../../shared/http/uuid'
import type { AgentRunDetail, AgentRunList, AgentRunSummary, ApiKeyList } from '../api-types'
import { Actions, ApiRefusal, DataTable, Field, type Flash, FlashNotice, PostAction } from '../components'
import type { ConsoleApp, ConsoleContext } from '../console.context'
import type { ApiResult } from '../console-api'
import { Frame, formatDate, formatNumber, Notice, type PageFrame } from '../layout'
import { formString, frameOf, html } from '../page'

const TERMINAL = new Set(['completed', 'failed', 'cancelled'])

/** Waiting states look like expiring keys (someone has to act), ended ones like expired keys. */
function badgeOf(state: string): string {
  if (state === 'running') return 'active'
  return TERMINAL.has(state) ? 'expired' : 'expiring'
}

const StateBadge = ({ state }: { state: string }) => <span class={`badge ${badgeOf(state)}`}>{state}</span>

/** Who started a run, by the names this page knows (the key's name, "you"). */
type Names = (run: AgentRunSummary) => string

async function namesOf(c: ConsoleContext): Promise<Names> {
  const keys = await c.get('api').get<ApiKeyList>('/platform/v1/api-keys?include_inactive=true')
  const byId = new Map(
    (keys.ok ? keys.body.data : []).map((k) => [k.id, `key “${k.name}” (${k.redacted_value})`]),
  )
  const me = c.get('workspace').user
  return (run) => {
    const { api_key_id, user_id, principal } = run.started_by
    if (api_key_id) return byId.get(api_key_id) ?? `key ${api_key_id.slice(0, 8)}…`
    if (user_id) return me?.id === user_id ? `you (${me.email})` : `user ${user_id.slice(0, 8)}…`
    return principal
  }
}

/**
 * The link or form target of one run: with its starter when known, since two credentials may have
 * started runs with the same id.
 */
function runPath(id: string, startedBy: string | null, suffix = ''): string {
  const pick = startedBy ? `?started_by=${encodeURIComponent(startedBy)}` : ''
  return `/console/agent-runs/${id}${suffix}${pick}`
}

function CancelButton(props: {
  id: string
  startedBy: string | null
  csrf: string
  from: 'list' | 'detail'
  small?: boolean
}) {
  return (
    <PostAction
      action={runPath(props.id, props.startedBy, '/cancel')}
      csrf={props.csrf}
      label="Cancel run"
      name={`Cancel run ${props.id}`}
      kind="danger"
      small={props.small ?? true}
      confirm="Cancel this run? Its running turn stops and pending approvals are dropped."
    >
      <input type="hidden" name="from" value={props.from} />
    </PostAction>
  )
}

function LookupForm({ runId }: { runId: string }) {
  return (
    <form method="get" action="/console/agent-runs" class="filters" aria-label="Find a run">
      <Field id="run_id" label="Run id">
        <input id="run_id" name="run_id" type="text" value={runId} required pattern="[0-9a-fA-F-]{36}" />
      </Field>
      <button type="submit" class="secondary">
        Look up
      </button>
    </form>
  )
}

async function renderList(c: ConsoleContext, flash?: Flash) {
  const state = c.req.query('state') ?? ''
  const cursor = c.req.query('cursor')
  const mode = c.get('mode')
  const filter = (RUN_STATES as readonly string[]).includes(state) ? state : ''
  const query = new URLSearchParams({ limit: '20', mode })
  if (filter) query.set('state', filter)
  if (cursor) query.set('cursor', cursor)
  const [runs, names] = await Promise.all([
    c.get('api').get<AgentRunList>(`/platform/v1/agent-runs?${query}`),
    namesOf(c),
  ])
  const frame = await frameOf(c, 'Agent runs', 'agent-runs')
  const older = new URLSearchParams(filter ? { state: filter } : {})
  if (runs.ok && runs.body.next_cursor) older.set('cursor', runs.body.next_cursor)
  return html(
    c,
    <Frame frame={frame}>
      <h1>Agent runs</h1>
      <p class="lead">
        The workspace's agent runs with {mode} keys and logins, newest first
        {c.get('workspace').role === 'member' ? ' (as a member: the runs you started)' : ''}. A running or
        waiting run can be cancelled here; its live turn ends with <code>turn.cancelled</code>.
      </p>
      <FlashNotice flash={flash} />
      <form method="get" action="/console/agent-runs" class="filters" aria-label="Filter runs">
        <Field id="state" label="State">
          <select id="state" name="state">
            <option value="" selected={filter === ''}>
              All states
            </option>
            {RUN_STATES.map((s) => (
              <option value={s} selected={filter === s}>
                {s}
              </option>
            ))}
          </select>
        </Field>
        <button type="submit" class="secondary">
          Filter
        </button>
      </form>
      <ApiRefusal result={runs} what="Agent runs" />
      {runs.ok ? (
        <DataTable
          label="Agent runs"
          fixed={true}
          columns={[
            { label: 'Run', rem: 6 },
            { label: 'State', rem: 9 },
            { label: 'Model and mode', rem: 12 },
            'Started by',
            { label: 'Tokens and cost', rem: 10 },
            { label: 'Updated', rem: 12 },
            { label: 'Actions', rem: 8 },
          ]}
          rows={runs.body.data}
          empty={filter ? `No ${filter} runs.` : 'No runs yet.'}
          row={(run) => (
            <tr data-run-id={run.id}>
              <td>
                <a href={runPath(run.id, run.started_by.principal)}>
                  <code>{run.id.slice(0, 8)}</code>
                </a>
              </td>
              <td>
                <StateBadge state={run.state} />
              </td>
              <td>
                {run.model} <span class={`badge ${run.mode}`}>{run.mode}</span> {run.agent_mode}
              </td>
              <td title={names(run)}>{names(run)}</td>
              <td title={`${run.turn_count} ${run.turn_count === 1 ? 'turn' : 'turns'}`}>
                {formatNumber(run.usage.total_tokens)} tokens · ${run.usage.cost_usd.toFixed(4)}
              </td>
              <td title={`created ${formatDate(run.created_at)}`}>{formatDate(run.updated_at)}</td>
              <td>
                {TERMINAL.has(run.state) ? null : (
                  <Actions>
                    <CancelButton
                      id={run.id}
                      startedBy={run.started_by.principal}
                      csrf={frame.csrf}
                      from="list"
                    />
                  </Actions>
                )}
              </td>
            </tr>
          )}
        />
      ) : null}
      {older.has('cursor') ? (
        <p>
          <a href={`/console/agent-runs?${older}`}>Older runs</a>
        </p>
      ) : null}
      <h2 id="lookup-h">Find a run by id</h2>
      <LookupForm runId="" />
    </Frame>,
  )
}

/** A run's detail: from the index (any run of the workspace), else the caller's own run by id. */
async function findRun(c: ConsoleContext, runId: string, startedBy: string) {
  const api = c.get('api')
  const pick = startedBy ? `?started_by=${encodeURIComponent(startedBy)}` : ''
  const indexed = await api.get<AgentRunDetail>(`/platform/v1/agent-runs/${runId}${pick}`)
  if (indexed.ok || indexed.status !== 404 || startedBy)
    return { result: indexed, summary: indexed.ok ? indexed.body : null }
  const own = await api.get<RunStatus>(`/svc/agents/runs/${runId}`)
  return {
    result: own.ok ? ({ ok: true, body: { status: own.body } } as const) : own,
    summary: null,
  }
}

function RunFacts({
  run,
  summary,
  names,
}: {
  run: RunStatus
  summary: AgentRunSummary | null
  names: Names
}) {
  return (
    <dl class="facts">
      <dt>State</dt>
      <dd>
        <StateBadge state={run.state} />
      </dd>
      <dt>Model and mode</dt>
      <dd>
        {run.model} · {run.mode} {run.test_mode ? '(test key)' : ''}
      </dd>
      <dt>Started by</dt>
      <dd>{summary ? names(summary) : 'you'}</dd>
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
        {run.pending_approvals.map((a) => `${a.tool_name} (until ${formatDate(a.expires_at)})`).join(', ') ||
          'none'}
      </dd>
      <dt>Created</dt>
      <dd>{formatDate(run.created_at)}</dd>
      <dt>Updated</dt>
      <dd>{formatDate(run.updated_at)}</dd>
    </dl>
  )
}

function RunPanel(props: {
  frame: PageFrame
  run: RunStatus
  summary: AgentRunSummary | null
  names: Names
}) {
  const { frame, run, summary, names } = props
  return (
    <section class="panel" aria-labelledby="run-h">
      <h2 id="run-h">
        Run <code>{run.id}</code>
      </h2>
      <RunFacts run={run} summary={summary} names={names} />
      {TERMINAL.has(run.state) ? null : (
        <div class="form-actions">
          <CancelButton
            id={run.id}
            startedBy={summary?.started_by.principal ?? null}
            csrf={frame.csrf}
            from="detail"
            small={false}
          />
        </div>
      )}
    </section>
  )
}

async function renderRun(c: ConsoleContext, runId: string, startedBy: string, flash?: Flash) {
  const [{ result, summary }, names] = await Promise.all([findRun(c, runId, startedBy), namesOf(c)])
  const frame = await frameOf(c, 'Agent run', 'agent-runs')
  const run = result.ok ? result.body.status : null
  return html(
    c,
    <Frame frame={frame}>
      <h1>Agent run</h1>
      <p>
        <a href="/console/agent-runs">All runs</a>
      </p>
      <FlashNotice flash={flash} />
      <LookupForm runId={runId} />
      {!result.ok && result.status === 404 ? (
        <Notice kind="error">
          No such run in this workspace (a member sees only the runs they started).
        </Notice>
      ) : (
        <ApiRefusal result={result as ApiResult<unknown>} what="This run" />
      )}
      {run ? <RunPanel frame={frame} run={run} summary={summary} names={names} /> : null}
    </Frame>,
  )
}

export function agentRunPages(app: Hono<ConsoleApp>): void {
  app.get('/agent-runs', (c) => {
    const runId = (c.req.query('run_id') ?? '').trim()
    if (!runId) return renderList(c)
    if (!UUID.test(runId)) return renderList(c, { kind: 'error', text: 'A run id is a UUID.' })
    return renderRun(c, runId.toLowerCase(), '')
  })

  app.get('/agent-runs/:id', (c) => {
    const id = c.req.param('id')
    if (!UUID.test(id)) return renderList(c, { kind: 'error', text: 'A run id is a UUID.' })
    return renderRun(c, id.toLowerCase(), c.req.query('started_by') ?? '')
  })

  app.post('/agent-runs/:id/cancel', async (c) => {
    const id = c.req.param('id')
    if (!UUID.test(id)) return renderList(c, { kind: 'error', text: 'A run id is a UUID.' })
    const startedBy = c.req.query('started_by') ?? ''
    const pick = startedBy ? `?started_by=${encodeURIComponent(startedBy)}` : ''
    let cancelled = await c.get('api').send<RunStatus>('POST', `/platform/v1/agent-runs/${id}/cancel${pick}`)
    // A run the index does not have yet: cancel it as its starter (the signed-in person's own run).
    if (!cancelled.ok && cancelled.status === 404 && !startedBy)
      cancelled = await c.get('api').send<RunStatus>('DELETE', `/svc/agents/runs/${id}`)
    const flash: Flash = cancelled.ok
      ? { kind: 'ok', text: `Run ${id} cancelled.` }
      : { kind: 'error', text: cancelled.error.message }
    return formString(c, 'from') === 'list' ? renderList(c, flash) : renderRun(c, id, startedBy, flash)
  })
}
