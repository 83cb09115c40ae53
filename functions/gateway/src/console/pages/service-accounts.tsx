/**
 * Service accounts (owners and admins): list, create (the secret shown once), rotate the secret
 * (the old one stops at once), revoke. Agent runs: look a run up by id, see its state and usage
 * against its caps, cancel it while it runs.
 */
import type { Hono } from 'hono'
import {
  type ConsoleApp,
  type ConsoleContext,
  formList,
  formString,
  frameOf,
  html,
  isAdmin,
} from '../console.app'
import { CsrfField, Frame, formatDate, formatNumber, Notice, TableRegion } from '../layout'

interface Account {
  id: string
  name: string
  audiences: string[]
  scopes: string[]
  created_by: string | null
  created_at: string
  rotated_at: string | null
  revoked_at: string | null
}

interface AccountState {
  secret?: { id: string; name: string; secret: string }
  notice?: { kind: 'ok' | 'error'; text: string }
}

async function renderAccounts(c: ConsoleContext, state: AccountState = {}, status = 200) {
  const frame = await frameOf(c, 'Service accounts', 'service-accounts')
  const admin = isAdmin(c)
  const listed = admin ? await c.get('api').get<{ data: Account[] }>('/platform/v1/service-accounts') : null
  return html(
    c,
    <Frame frame={frame}>
      <h1>Service accounts</h1>
      <p class="lead">
        Non-human principals: exchange the id and secret at <code>POST /auth/service-token</code> for an
        access token (audience <code>internal-service</code> or <code>external-api</code>).
      </p>
      {state.secret ? (
        <Notice kind="ok" title="Copy the secret now">
          <p>
            Client id <code>{state.secret.id}</code> (“{state.secret.name}”). The secret is shown only this
            once:
          </p>
          <div class="secret">
            <code id="new-secret">{state.secret.secret}</code>
            <button
              type="button"
              class="secondary small"
              data-copy="new-secret"
              data-status="copy-status"
              hidden
            >
              Copy
            </button>
            <span id="copy-status" role="status" aria-live="polite" />
          </div>
        </Notice>
      ) : null}
      {state.notice ? <Notice kind={state.notice.kind}>{state.notice.text}</Notice> : null}
      {!admin ? <p class="muted">Only workspace owners and admins see and manage service accounts.</p> : null}
      {listed && !listed.ok ? <Notice kind="error">{listed.error.message}</Notice> : null}
      {listed?.ok ? (
        <TableRegion label="Service accounts">
          <table>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Client id</th>
                <th scope="col">Audiences</th>
                <th scope="col">Created</th>
                <th scope="col">Status</th>
                <th scope="col">Actions</th>
              </tr>
            </thead>
            <tbody>
              {listed.body.data.map((a) => (
                <tr>
                  <td>{a.name}</td>
                  <td>
                    <code>{a.id}</code>
                  </td>
                  <td>{a.audiences.join(', ')}</td>
                  <td>{formatDate(a.created_at)}</td>
                  <td>
                    {a.revoked_at ? (
                      <span class="badge revoked">revoked</span>
                    ) : (
                      <span class="badge active">active</span>
                    )}
                    {a.rotated_at ? <span class="hint">rotated {formatDate(a.rotated_at)}</span> : null}
                  </td>
                  <td>
                    {a.revoked_at ? (
                      '—'
                    ) : (
                      <div class="actions">
                        <form
                          method="post"
                          action={`/console/service-accounts/${a.id}/rotate`}
                          class="inline"
                          data-confirm={`Rotate the secret of “${a.name}”? The current secret stops working at once.`}
                        >
                          <CsrfField csrf={frame.csrf} />
                          <button
                            type="submit"
                            class="secondary small"
                            aria-label={`Rotate the secret of ${a.name}`}
                          >
                            Rotate secret
                          </button>
                        </form>
                        <form
                          method="post"
                          action={`/console/service-accounts/${a.id}/revoke`}
                          class="inline"
                          data-confirm={`Revoke “${a.name}”? Its secret and tokens stop working.`}
                        >
                          <CsrfField csrf={frame.csrf} />
                          <button type="submit" class="danger small" aria-label={`Revoke ${a.name}`}>
                            Revoke
                          </button>
                        </form>
                      </div>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </TableRegion>
      ) : null}
      {admin ? (
        <section aria-labelledby="sa-create-h">
          <h2 id="sa-create-h">Create a service account</h2>
          <form method="post" action="/console/service-accounts" class="panel">
            <CsrfField csrf={frame.csrf} />
            <div class="form-grid">
              <div class="field">
                <label for="sa-name">Name</label>
                <input id="sa-name" name="name" type="text" required maxlength={120} />
              </div>
              <fieldset class="choices">
                <legend>Token audiences</legend>
                <label>
                  <input type="checkbox" name="audiences" value="internal-service" checked /> internal-service
                </label>
                <label>
                  <input type="checkbox" name="audiences" value="external-api" /> external-api
                </label>
              </fieldset>
            </div>
            <button type="submit">Create service account</button>
          </form>
        </section>
      ) : null}
    </Frame>,
    status,
  )
}

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

async function renderRun(c: ConsoleContext, runId: string, notice?: { kind: 'ok' | 'error'; text: string }) {
  const frame = await frameOf(c, 'Agent runs', 'agent-runs')
  const found = runId ? await c.get('api').get<Run>(`/svc/agents/runs/${encodeURIComponent(runId)}`) : null
  const run = found?.ok ? found.body : null
  return html(
    c,
    <Frame frame={frame}>
      <h1>Agent runs</h1>
      <p class="lead">
        A run belongs to the credential that started it (its <code>run_id</code> is in the turn's events).
        Look one up to see its state and usage, and cancel it while it runs.
      </p>
      {notice ? <Notice kind={notice.kind}>{notice.text}</Notice> : null}
      <form method="get" action="/console/agent-runs" class="filters" aria-label="Find a run">
        <div class="field">
          <label for="run_id">Run id</label>
          <input id="run_id" name="run_id" type="text" value={runId} required pattern="[0-9a-fA-F-]{36}" />
        </div>
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
            <form
              method="post"
              action={`/console/agent-runs/${run.id}/cancel`}
              data-confirm="Cancel this run? The running turn stops."
            >
              <CsrfField csrf={frame.csrf} />
              <button type="submit" class="danger">
                Cancel run
              </button>
            </form>
          )}
        </section>
      ) : null}
    </Frame>,
  )
}

export function serviceAccountPages(app: Hono<ConsoleApp>): void {
  app.get('/service-accounts', (c) => {
    const done = c.req.query('revoked')
    return renderAccounts(c, done ? { notice: { kind: 'ok', text: `Service account ${done} revoked.` } } : {})
  })

  app.post('/service-accounts', async (c) => {
    const audiences = formList(c, 'audiences')
    const made = await c
      .get('api')
      .send<Account & { secret: string }>('POST', '/platform/v1/service-accounts', {
        name: formString(c, 'name'),
        ...(audiences.length ? { audiences } : {}),
      })
    if (!made.ok)
      return renderAccounts(c, { notice: { kind: 'error', text: made.error.message } }, made.status)
    return renderAccounts(
      c,
      { secret: { id: made.body.id, name: made.body.name, secret: made.body.secret } },
      201,
    )
  })

  app.post('/service-accounts/:id/rotate', async (c) => {
    const rotated = await c
      .get('api')
      .send<Account & { secret: string }>(
        'POST',
        `/platform/v1/service-accounts/${encodeURIComponent(c.req.param('id'))}/rotate`,
      )
    if (!rotated.ok)
      return renderAccounts(c, { notice: { kind: 'error', text: rotated.error.message } }, rotated.status)
    return renderAccounts(c, {
      secret: { id: rotated.body.id, name: rotated.body.name, secret: rotated.body.secret },
    })
  })

  app.post('/service-accounts/:id/revoke', async (c) => {
    const revoked = await c
      .get('api')
      .send<Account>('DELETE', `/platform/v1/service-accounts/${encodeURIComponent(c.req.param('id'))}`)
    if (!revoked.ok)
      return renderAccounts(c, { notice: { kind: 'error', text: revoked.error.message } }, revoked.status)
    return c.redirect(
      `/console/service-accounts?revoked=${encodeURIComponent(`“${revoked.body.name}”`)}`,
      303,
    )
  })

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
