/**
 * Telemetry: the OTLP receiver's status (collector probe, the last minutes' error rate), what the
 * workspace sent lately (spans, metrics and log records sampled from the newest exports the
 * collector took), totals per signal and the newest ingestions; and the observability tokens that
 * open ingestion (owners and admins: create with the token shown once, rotate, revoke). A client
 * of /platform/v1/telemetry/* and /platform/v1/observability-tokens.
 */
import type { Hono } from 'hono'
import type { Child } from 'hono/jsx'
import type {
  IngestionList,
  ObservabilityTokenList,
  ObservabilityTokenWithSecret,
  RecentTelemetry,
  TelemetryStatus,
} from '../api-types'
import {
  Actions,
  ApiRefusal,
  DataTable,
  Field,
  type Flash,
  FlashNotice,
  invalid,
  PostAction,
  SecretOnce,
} from '../components'
import type { ConsoleApp, ConsoleContext } from '../console.context'
import { CsrfField, Frame, formatDate, formatNumber } from '../layout'
import { formString, frameOf, html, isAdmin } from '../page'

const TOKENS = '/platform/v1/observability-tokens'
/** Exports per signal asked for, and items shown per table. */
const RECENT_EXPORTS = 5
const RECENT_ROWS = 20

/** A span's duration as measured: microseconds under a second, then seconds. */
function formatDuration(ms: number | null): string {
  if (ms === null) return '—'
  return ms < 1000 ? `${ms} ms` : `${(ms / 1000).toFixed(3)} s`
}

/** Attributes as `key=value` chips, opened from a one-line summary; nothing shown as "—". */
function Attributes(props: { attributes: Record<string, string | number | boolean> }) {
  const entries = Object.entries(props.attributes)
  if (entries.length === 0) return <span class="muted">—</span>
  return (
    <details>
      <summary>
        {entries.length} {entries.length === 1 ? 'attribute' : 'attributes'}:{' '}
        {entries.map(([key]) => key).join(', ')}
      </summary>
      <span class="attributes">
        {entries.map(([key, value]) => (
          <code>
            {key}={String(value)}
          </code>
        ))}
      </span>
    </details>
  )
}

/** Spans, metrics and log records of the newest exports, one row per item, newest first. */
function ReceivedLately({ recent }: { recent: RecentTelemetry }) {
  const spans = recent.traces
    .flatMap((e) => e.spans.map((s) => ({ ...s, at: e.created_at })))
    .slice(0, RECENT_ROWS)
  const metrics = recent.metrics
    .flatMap((e) => e.metrics.map((m) => ({ ...m, at: e.created_at })))
    .slice(0, RECENT_ROWS)
  const records = recent.logs
    .flatMap((e) => e.records.map((r) => ({ ...r, at: e.created_at })))
    .slice(0, RECENT_ROWS)
  return (
    <>
      <h2 id="received-h">Received lately</h2>
      <p class="muted">
        The first items of the newest exports the collector took (up to {RECENT_EXPORTS} exports per signal),
        as they were received.
      </p>
      <h3>Traces</h3>
      <DataTable
        label="Recent spans"
        fixed={true}
        columns={[
          { label: 'Started', rem: 12 },
          'Service',
          'Span',
          { label: 'Duration', num: true, rem: 6 },
          { label: 'Status', rem: 6 },
          'Attributes',
        ]}
        rows={spans}
        empty="No spans received yet."
        row={(s) => (
          <tr data-span-id={s.span_id}>
            <td class="nowrap">{formatDate(s.start_time ?? s.at)}</td>
            <td>{s.service ?? <span class="muted">unknown</span>}</td>
            <td>
              {s.name}
              <span class="hint">{s.kind}</span>
            </td>
            <td class="num nowrap">{formatDuration(s.duration_ms)}</td>
            <td>{s.status}</td>
            <td>
              <Attributes attributes={s.attributes} />
            </td>
          </tr>
        )}
      />
      <h3>Metrics</h3>
      <DataTable
        label="Recent metrics"
        fixed={true}
        columns={[
          { label: 'Received', rem: 12 },
          'Service',
          'Metric',
          { label: 'Type', rem: 6 },
          { label: 'Value', num: true, rem: 7 },
          { label: 'Points', num: true, rem: 5 },
          'Attributes',
        ]}
        rows={metrics}
        empty="No metrics received yet."
        row={(m) => (
          <tr>
            <td class="nowrap">{formatDate(m.at)}</td>
            <td>{m.service ?? <span class="muted">unknown</span>}</td>
            <td>
              {m.name}
              {m.unit ? <span class="hint">{m.unit}</span> : null}
            </td>
            <td>{m.type}</td>
            <td class="num nowrap">
              {m.value === null ? '—' : String(m.value)}
              {m.count === null ? null : <span class="hint">count {formatNumber(m.count)}</span>}
            </td>
            <td class="num">{formatNumber(m.points)}</td>
            <td>
              <Attributes attributes={m.attributes} />
            </td>
          </tr>
        )}
      />
      <h3>Logs</h3>
      <DataTable
        label="Recent log records"
        fixed={true}
        columns={[{ label: 'Time', rem: 12 }, 'Service', { label: 'Severity', rem: 6 }, 'Body', 'Attributes']}
        rows={records}
        empty="No log records received yet."
        row={(r) => (
          <tr>
            <td class="nowrap">{formatDate(r.time ?? r.at)}</td>
            <td>{r.service ?? <span class="muted">unknown</span>}</td>
            <td>{r.severity}</td>
            <td title={r.body}>{r.body}</td>
            <td>
              <Attributes attributes={r.attributes} />
            </td>
          </tr>
        )}
      />
    </>
  )
}

interface PageState {
  flash?: Flash
  /** A token just created or rotated: its value, shown in this answer only. */
  secret?: { name: string; token: string; what: string }
  /** A refused create: the server's message for the name field, and what was typed. */
  nameError?: { message: string; value: string }
}

function ReceiverCards({ status }: { status: TelemetryStatus }) {
  const { collector, recent } = status
  return (
    <div class="cards">
      <div class="card">
        <h2>Collector</h2>
        <p class="big" data-collector-state>
          {!collector.configured ? 'not configured' : collector.reachable ? 'reachable' : 'unreachable'}
        </p>
        <p class="muted">
          {collector.endpoint ?? ''}
          {collector.probe_ms === null ? '' : ` · probe ${collector.probe_ms} ms`}
          {collector.detail ? ` · ${collector.detail}` : ''}
        </p>
      </div>
      <div class="card">
        <h2>Last {Math.round(recent.window_seconds / 60)} min</h2>
        <p class="big">
          {formatNumber(recent.requests)} export
          {recent.requests === 1 ? '' : 's'}
        </p>
        <p class="muted">
          error rate {(recent.error_rate * 100).toFixed(1)}% · {formatNumber(recent.refused)} refused ·{' '}
          {formatNumber(recent.collector_failed)} not taken by the collector
        </p>
      </div>
    </div>
  )
}

/** The observability tokens with rotate and revoke, and the form that makes one. */
function ObservabilityTokens({
  tokens,
  csrf,
  nameError,
}: {
  tokens: ObservabilityTokenList
  csrf: string
  nameError: PageState['nameError']
}) {
  return (
    <>
      <DataTable
        label="Observability tokens"
        fixed={true}
        columns={[
          'Name',
          { label: 'Token', rem: 9 },
          { label: 'Status', rem: 9 },
          { label: 'Created', rem: 12 },
          { label: 'Last used', rem: 12 },
          { label: 'Actions', rem: 12 },
        ]}
        rows={tokens.data}
        empty="No observability tokens yet."
        row={(t) => (
          <tr data-token-id={t.id}>
            <td>{t.name}</td>
            <td class="nowrap">
              <code>svc_ot_…{t.suffix}</code>
            </td>
            <td>
              <span class={`badge ${t.revoked_at ? 'revoked' : 'active'}`}>
                {t.revoked_at ? 'revoked' : 'active'}
              </span>
              {t.rotated_at ? <span class="hint">rotated {formatDate(t.rotated_at)}</span> : null}
            </td>
            <td class="nowrap">{formatDate(t.created_at)}</td>
            <td class="nowrap">{formatDate(t.last_used_at)}</td>
            <td>
              {t.revoked_at ? (
                '—'
              ) : (
                <Actions>
                  <PostAction
                    action={`/console/telemetry/tokens/${t.id}/rotate`}
                    csrf={csrf}
                    label="Rotate"
                    name={`Rotate ${t.name}`}
                    confirm={`Rotate “${t.name}”? The current token stops working at once.`}
                  />
                  <PostAction
                    action={`/console/telemetry/tokens/${t.id}/revoke`}
                    csrf={csrf}
                    label="Revoke"
                    name={`Revoke ${t.name}`}
                    kind="danger"
                    confirm={`Revoke “${t.name}”? Exports with it are refused from now on.`}
                  />
                </Actions>
              )}
            </td>
          </tr>
        )}
      />
      <form method="post" action="/console/telemetry/tokens" class="panel" aria-labelledby="token-new-h">
        <h3 id="token-new-h">Create an observability token</h3>
        <CsrfField csrf={csrf} />
        <Field
          id="token-name"
          label="Token name"
          hint="Where it is used, e.g. production collector"
          error={nameError?.message}
        >
          <input
            id="token-name"
            name="name"
            type="text"
            required
            maxlength={120}
            value={nameError?.value ?? ''}
            {...invalid('token-name', nameError?.message)}
          />
        </Field>
        <button type="submit">Create token</button>
      </form>
    </>
  )
}

/** Totals per signal and the newest ingestions; `sender` names who sent each. */
function Ingestions({
  ingestions,
  sender,
}: {
  ingestions: IngestionList
  sender: (principal: string) => Child
}) {
  return (
    <>
      <h2>Totals per signal</h2>
      <DataTable
        label="Totals per signal"
        columns={[
          'Signal',
          { label: 'Exports', num: true },
          { label: 'Forwarded', num: true },
          { label: 'Failed', num: true },
          { label: 'Items', num: true },
          { label: 'Bytes', num: true },
          'Last',
        ]}
        rows={ingestions.totals}
        empty="Nothing ingested yet."
        row={(t) => (
          <tr>
            <td>{t.signal}</td>
            <td class="num">{formatNumber(t.requests)}</td>
            <td class="num">{formatNumber(t.forwarded_requests)}</td>
            <td class="num">{formatNumber(t.failed_requests)}</td>
            <td class="num">{formatNumber(t.items)}</td>
            <td class="num">{formatNumber(t.received_bytes)}</td>
            <td class="nowrap">{formatDate(t.last_ingested_at)}</td>
          </tr>
        )}
      />
      <h2>Newest ingestions</h2>
      <DataTable
        label="Newest ingestions"
        fixed={true}
        columns={[
          { label: 'Time', rem: 12 },
          { label: 'Request id', rem: 8 },
          { label: 'Signal', rem: 5 },
          'Outcome',
          { label: 'Items', num: true, rem: 6 },
          { label: 'Latency', num: true, rem: 6 },
          'Sent by',
        ]}
        rows={ingestions.data}
        empty="Nothing ingested yet."
        row={(i) => (
          <tr>
            <td class="nowrap">{formatDate(i.created_at)}</td>
            <td class="clip-start" title={i.request_id}>
              <code>{i.request_id}</code>
            </td>
            <td>{i.signal}</td>
            <td>
              {i.outcome} ({i.status}){i.error_code ? <span class="hint">{i.error_code}</span> : null}
            </td>
            <td class="num">
              {formatNumber(i.items)}
              {i.rejected_items ? ` (${i.rejected_items} rejected)` : ''}
            </td>
            <td class="num">{i.duration_ms} ms</td>
            <td>{sender(i.principal)}</td>
          </tr>
        )}
      />
    </>
  )
}

async function render(c: ConsoleContext, state: PageState = {}, status = 200) {
  const api = c.get('api')
  const admin = isAdmin(c)
  const [receiver, recent, ingestions, tokens] = await Promise.all([
    api.get<TelemetryStatus>('/platform/v1/telemetry/status'),
    api.get<RecentTelemetry>(`/platform/v1/telemetry/recent?limit=${RECENT_EXPORTS}`),
    api.get<IngestionList>('/platform/v1/telemetry/ingestions?limit=50'),
    admin ? api.get<ObservabilityTokenList>(TOKENS) : Promise.resolve(null),
  ])
  const frame = await frameOf(c, 'Telemetry', 'telemetry')
  const tokenNames = new Map((tokens?.ok ? tokens.body.data : []).map((t) => [t.id, t.name]))
  // An export's principal names the token (`sub:observability-token:<id>`) or the service account.
  const sender = (principal: string) => {
    const name = tokenNames.get(principal.split(':').at(-1) ?? '')
    return name ? `token “${name}”` : <code>{principal}</code>
  }
  return html(
    c,
    <Frame frame={frame}>
      <h1>Telemetry</h1>
      <p class="lead">
        OTLP traces, metrics and logs sent to <code>/otlp/v1/traces</code>, <code>/metrics</code> and{' '}
        <code>/logs</code> with an observability token (below) or a service account's access token (audience{' '}
        <code>internal-service</code>). API keys are refused there.
      </p>
      {state.secret ? (
        <SecretOnce title={`${state.secret.what}: copy the token now`} secret={state.secret.token}>
          <p>
            This is the only time the token of “{state.secret.name}” is shown. Give it to your collector or
            SDK as <code>Authorization: Bearer …</code>.
          </p>
        </SecretOnce>
      ) : null}
      <FlashNotice flash={state.flash} />
      <ApiRefusal result={receiver} what="Receiver status" />
      {receiver.ok ? <ReceiverCards status={receiver.body} /> : null}
      <ApiRefusal result={recent} what="Recent telemetry" />
      {recent.ok ? <ReceivedLately recent={recent.body} /> : null}
      <h2 id="tokens-h">Observability tokens</h2>
      {!admin ? (
        <p class="muted">Only workspace owners and admins see and manage observability tokens.</p>
      ) : null}
      {tokens ? <ApiRefusal result={tokens} what="Observability tokens" /> : null}
      {tokens?.ok ? (
        <ObservabilityTokens tokens={tokens.body} csrf={frame.csrf} nameError={state.nameError} />
      ) : null}
      <ApiRefusal result={ingestions} what="Ingestions" />
      {ingestions.ok ? <Ingestions ingestions={ingestions.body} sender={sender} /> : null}
    </Frame>,
    status,
  )
}

export function telemetryPages(app: Hono<ConsoleApp>): void {
  app.get('/telemetry', (c) => {
    const revoked = c.req.query('revoked')
    return render(c, revoked ? { flash: { kind: 'ok', text: `Token ${revoked} revoked.` } } : {})
  })

  app.post('/telemetry/tokens', async (c) => {
    const name = formString(c, 'name')
    const made = await c.get('api').send<ObservabilityTokenWithSecret>('POST', TOKENS, { name })
    if (!made.ok) {
      return render(
        c,
        made.error.param === 'name'
          ? { nameError: { message: made.error.message, value: name } }
          : { flash: { kind: 'error', text: made.error.message } },
        made.status,
      )
    }
    return render(c, { secret: { name: made.body.name, token: made.body.token, what: 'Token created' } }, 201)
  })

  app.post('/telemetry/tokens/:id/rotate', async (c) => {
    const rotated = await c
      .get('api')
      .send<ObservabilityTokenWithSecret>('POST', `${TOKENS}/${encodeURIComponent(c.req.param('id'))}/rotate`)
    if (!rotated.ok)
      return render(c, { flash: { kind: 'error', text: rotated.error.message } }, rotated.status)
    return render(c, {
      secret: {
        name: rotated.body.name,
        token: rotated.body.token,
        what: 'Rotated; the old token is refused from now on',
      },
    })
  })

  app.post('/telemetry/tokens/:id/revoke', async (c) => {
    const revoked = await c
      .get('api')
      .send<ObservabilityTokenList['data'][number]>(
        'DELETE',
        `${TOKENS}/${encodeURIComponent(c.req.param('id'))}`,
      )
    if (!revoked.ok)
      return render(c, { flash: { kind: 'error', text: revoked.error.message } }, revoked.status)
    return c.redirect(
      `/console/telemetry?revoked=${encodeURIComponent(`“${revoked.body.name}” (…${revoked.body.suffix})`)}`,
      303,
    )
  })
}
