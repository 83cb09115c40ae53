/**
 * Usage: tokens, requests and credits per day and model as charts, filterable by period and API
 * key in the current mode, and the request log (request id, endpoint, model, status, latency,
 * tokens, credits).
 */

import type { Hono } from 'hono'
import { UUID } from '../../../../shared/http/uuid'
import type { ApiKey, ApiKeyList, UsageReport, UsageRequest, UsageRequests } from '../api-types'
import { BarChart, lastDays, TotalsChart, toSeries } from '../charts'
import { DataTable, Pager } from '../components'
import type { ConsoleApp } from '../console.context'
import { Frame, formatCents, formatDate, formatLatency, formatNumber, Notice } from '../layout'
import { frameOf, html } from '../page'

const PERIODS = [7, 14, 30, 90] as const
const OUTCOMES = ['failed', 'succeeded'] as const
const dollars = (cents: number) => `$${Number((cents / 100).toPrecision(3))}`
/** Requests per page of the log: a page that fits a screen or two, then "Older requests". */
const LOG_PAGE = 25

/**
 * The status the client received (docs/plans.md, "The request log"). null: the request never
 * ended (its isolate went away mid-stream) and was billed from its last checkpoint, or the row
 * predates statuses.
 */
function RequestStatus({ status }: { status: number | null }) {
  if (status === null)
    return <span title="No final status: billed from the request's last checkpoint">—</span>
  const meaning = status === 499 ? 'cancelled by the client' : status < 400 ? 'succeeded' : 'failed'
  return (
    <span class={`badge status-${Math.min(5, Math.floor(status / 100))}xx`} title={meaning}>
      {status}
    </span>
  )
}

/** The period, API key and outcome the page shows, as a GET form. */
function UsageFilters(props: { days: number; keyId: string; outcome: string; mode: string; keys: ApiKey[] }) {
  const { days, keyId, outcome, mode, keys } = props
  return (
    <form method="get" action="/console/usage" class="filters" aria-label="Filter usage">
      <div class="field">
        <label for="days">Period</label>
        <select id="days" name="days">
          {PERIODS.map((p) => (
            <option value={String(p)} selected={p === days}>
              last {p} days
            </option>
          ))}
        </select>
      </div>
      <div class="field">
        <label for="key_id">API key</label>
        <select id="key_id" name="key_id">
          <option value="">all {mode} keys</option>
          {keys.map((k) => (
            <option value={k.id} selected={k.id === keyId}>
              {k.name} ({k.redacted_value})
            </option>
          ))}
        </select>
      </div>
      <div class="field">
        <label for="outcome">Request log</label>
        <select id="outcome" name="outcome">
          <option value="">all requests</option>
          <option value="failed" selected={outcome === 'failed'}>
            failed only (status 400 and above)
          </option>
          <option value="succeeded" selected={outcome === 'succeeded'}>
            succeeded only
          </option>
        </select>
      </div>
      <button type="submit" class="secondary">
        Apply
      </button>
    </form>
  )
}

/**
 * The request log, one line a request: the request id is cut at the front (its distinctive end
 * shows; the whole id is in the page and its title), the endpoint and key at their end.
 */
function RequestLog(props: { rows: UsageRequest[]; keyName: (principal: string) => string; empty: string }) {
  return (
    <DataTable
      label="Request log"
      fixed={true}
      columns={[
        { label: 'Time', rem: 12 },
        { label: 'Request id', rem: 8 },
        'Endpoint',
        { label: 'Model', rem: 6 },
        { label: 'Status', rem: 5 },
        { label: 'Latency', num: true, rem: 5 },
        { label: 'Tokens in / out', num: true, rem: 8 },
        { label: 'Credits', num: true, rem: 5 },
        'Key',
      ]}
      rows={props.rows}
      empty={props.empty}
      row={(r) => (
        <tr>
          <td>{formatDate(r.created_at)}</td>
          <td class="clip-start" title={r.request_id}>
            <code>{r.request_id}</code>
          </td>
          <td title={r.endpoint}>{r.endpoint}</td>
          <td title={r.model}>{r.model}</td>
          <td>
            <RequestStatus status={r.status} />
          </td>
          <td class="num">{formatLatency(r.latency_ms)}</td>
          <td class="num" title={r.estimated ? 'estimated' : undefined}>
            {r.unit === 'tokens'
              ? `${formatNumber(r.prompt_tokens)} / ${formatNumber(r.completion_tokens)}`
              : `${formatNumber(r.quantity)} ${r.unit}`}
            {r.estimated ? ' (estimated)' : ''}
          </td>
          <td class="num">{formatCents(r.credits_cents)}</td>
          <td title={props.keyName(r.principal)}>{props.keyName(r.principal)}</td>
        </tr>
      )}
    />
  )
}

export function usagePages(app: Hono<ConsoleApp>): void {
  app.get('/usage', async (c) => {
    const api = c.get('api')
    const mode = c.get('mode')
    const days = PERIODS.find((p) => String(p) === c.req.query('days')) ?? 30
    const keyId = UUID.test(c.req.query('key_id') ?? '') ? c.req.query('key_id')! : ''
    const cursor = c.req.query('cursor') ?? ''
    const outcome = OUTCOMES.find((o) => o === c.req.query('outcome')) ?? ''
    const filter = `mode=${mode}${keyId ? `&key_id=${keyId}` : ''}`
    const logFilter = `${filter}${outcome ? `&outcome=${outcome}` : ''}`
    const filters = `days=${days}${keyId ? `&key_id=${keyId}` : ''}${outcome ? `&outcome=${outcome}` : ''}`
    const [usage, requests, keys] = await Promise.all([
      api.get<UsageReport>(`/platform/v1/usage?days=${days}&${filter}`),
      api.get<UsageRequests>(
        `/platform/v1/usage/requests?limit=${LOG_PAGE}&${logFilter}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
      ),
      api.get<ApiKeyList>(`/platform/v1/api-keys?mode=${mode}`),
    ])
    const axis = lastDays(days)
    const rows = usage.ok ? usage.body.data : []
    const tokenRows = rows.filter((r) => r.unit === 'tokens')
    const keyName = new Map(
      (keys.ok ? keys.body.data : []).map((k) => [`key:${k.id}`, `${k.name} (${k.redacted_value})`]),
    )
    // One series per model for each quantity, shared by the per-day and per-model charts (same colours).
    const perModel = (subset: typeof rows, value: (r: (typeof rows)[number]) => number) =>
      toSeries(
        axis,
        subset,
        (r) => r.model,
        (r) => r.day,
        value,
      )
    const tokens = perModel(tokenRows, (r) => r.prompt_tokens + r.completion_tokens)
    const requestCounts = perModel(rows, (r) => r.requests)
    const credits = perModel(rows, (r) => r.credits_cents)
    const frame = await frameOf(c, 'Usage', 'usage')
    const log = requests.ok ? requests.body.data : []
    return html(
      c,
      <Frame frame={frame}>
        <h1>Usage</h1>
        <p class="lead">
          What the <strong>{mode}</strong> keys used, from the usage ledger (one row per metered request).
        </p>
        <UsageFilters
          days={days}
          keyId={keyId}
          outcome={outcome}
          mode={mode}
          keys={keys.ok ? keys.body.data : []}
        />
        {!usage.ok ? <Notice kind="error">Usage could not be read: {usage.error.message}</Notice> : null}
        {usage.ok ? (
          <div class="cards">
            <div class="card">
              <h2>Requests</h2>
              <p class="big">{formatNumber(usage.body.totals.requests)}</p>
            </div>
            <div class="card">
              <h2>Tokens</h2>
              <p class="big">{formatNumber(usage.body.totals.tokens)}</p>
            </div>
            <div class="card">
              <h2>Credits charged</h2>
              <p class="big">{formatCents(usage.body.totals.credits_cents)}</p>
            </div>
          </div>
        ) : null}
        <h2>Per day</h2>
        <BarChart id="usage-tokens" title="Tokens" days={axis} unit="tokens" series={tokens} />
        <BarChart id="usage-requests" title="Requests" days={axis} unit="requests" series={requestCounts} />
        <BarChart
          id="usage-credits"
          title="Credits"
          days={axis}
          unit="USD"
          format={dollars}
          whole={false}
          series={credits}
        />
        <h2>Per model</h2>
        <TotalsChart id="usage-tokens-by-model" title="Tokens" unit="tokens" series={tokens} />
        <TotalsChart id="usage-requests-by-model" title="Requests" unit="requests" series={requestCounts} />
        <TotalsChart
          id="usage-credits-by-model"
          title="Credits"
          unit="USD"
          format={dollars}
          series={credits}
        />
        <h2 id="log-h">Request log</h2>
        <RequestLog
          rows={log}
          keyName={(principal) => keyName.get(principal) ?? principal}
          empty={`No ${outcome === 'failed' ? 'failed' : outcome === 'succeeded' ? 'succeeded' : 'metered'} requests ${cursor ? 'before this point' : 'yet'}.`}
        />
        <Pager
          what="requests"
          newest={cursor ? `/console/usage?${filters}` : null}
          older={
            requests.ok && requests.body.next_cursor
              ? `/console/usage?${filters}&cursor=${encodeURIComponent(requests.body.next_cursor)}`
              : null
          }
        />
      </Frame>,
    )
  })
}
