/**
 * One API key's page (`/console/api-keys/{id}`, where a spent key's refusal points): what the key
 * has spent in its period (a bar with the reset time), its limits — the models it may use, a spend
 * limit per period, its own rate limits — edited by owners and admins, its usage in the usage
 * charts, and its signed usage statement to download (docs/plans.md, "Per-key limits").
 */
import type { Hono } from 'hono'
import { MODEL_ALIASES } from '../../../../shared/catalog/model-aliases'
import { UUID } from '../../../../shared/http/uuid'
import { SPEND_PERIODS } from '../../../../shared/metering/spend-period'
import type { ApiKey } from '../api-types'
import { Field, type Flash, FlashNotice, invalid } from '../components'
import type { ConsoleApp, ConsoleContext } from '../console.context'
import { CsrfField, Frame, formatDate, Notice } from '../layout'
import { formList, formString, frameOf, html, isAdmin } from '../page'

const PERIOD_WORDS: Record<(typeof SPEND_PERIODS)[number], string> = {
  day: 'per day (resets 00:00 UTC)',
  week: 'per week (resets Monday 00:00 UTC)',
  month: 'per month (resets on the 1st, 00:00 UTC)',
  total: 'in total (never resets)',
}

interface PageState {
  notice?: Flash
  /** A refused change: the server's message, the field it names, and what was typed. */
  error?: { message: string; param: string | null; values: Record<string, string | string[]> }
}

const usd = (n: number) => `$${n.toFixed(n >= 100 ? 2 : 4)}`

/** The spend of the current period as a bar: used of the limit, what is left, when it resets. */
function SpendBar({ k }: { k: ApiKey }) {
  const spend = k.spend
  if (!spend) return <p class="muted">No spend limit: this key may spend what the workspace may.</p>
  const share = spend.amount_usd > 0 ? Math.min(1, spend.used_usd / spend.amount_usd) : 1
  return (
    <section aria-labelledby="spend-heading" class="panel">
      <h2 id="spend-heading">Spend this {spend.period === 'total' ? 'key’s lifetime' : spend.period}</h2>
      <meter
        id="key-spend"
        min={0}
        max={spend.amount_usd}
        low={spend.amount_usd * 0.75}
        high={spend.amount_usd * 0.9}
        optimum={0}
        value={Math.min(spend.used_usd, spend.amount_usd)}
        aria-label={`Spent ${usd(spend.used_usd)} of ${usd(spend.amount_usd)}`}
      />
      <p>
        <strong>{usd(spend.used_usd)}</strong> of {usd(spend.amount_usd)} spent at list price (
        {Math.round(share * 100)}%), {usd(spend.remaining_usd)} left.{' '}
        {spend.resets_at ? `Resets ${formatDate(spend.resets_at)}.` : 'Never resets.'}
      </p>
    </section>
  )
}

/** The limits form (owners and admins): an empty field removes that limit. */
function LimitsForm({ k, csrf, err }: { k: ApiKey; csrf: string; err: PageState['error'] }) {
  const typed = (name: string, fallback: string) => {
    const v = err?.values[name]
    return typeof v === 'string' ? v : fallback
  }
  const paramError = (param: string) =>
    err && (err.param ?? '').split(/[.[]/)[0] === param ? err.message : null
  const models = new Set(
    err ? [err.values.allowed_models ?? []].flat() : (k.allowed_models ?? ([] as string[])),
  )
  return (
    <section aria-labelledby="limits-heading">
      <h2 id="limits-heading">Limits</h2>
      {err &&
      !['allowed_models', 'spend_limit', 'rate_limit'].includes((err.param ?? '').split(/[.[]/)[0] ?? '') ? (
        <Notice kind="error">{err.message}</Notice>
      ) : null}
      <form method="post" action={`/console/api-keys/${k.id}/limits`} class="panel">
        <CsrfField csrf={csrf} />
        <fieldset class="choices">
          <legend>Models (none ticked: every model the plan allows)</legend>
          {MODEL_ALIASES.map((alias) => (
            <label>
              <input type="checkbox" name="allowed_models" value={alias} checked={models.has(alias)} />{' '}
              <code>{alias}</code>
            </label>
          ))}
          {paramError('allowed_models') ? (
            <span class="hint error-text" role="alert">
              {paramError('allowed_models')}
            </span>
          ) : null}
        </fieldset>
        <div class="form-grid">
          <Field
            id="spend-amount"
            label="Spend limit (USD)"
            hint="At list price, test mode too; empty: no limit"
            error={paramError('spend_limit')}
          >
            <input
              id="spend-amount"
              name="spend_amount_usd"
              type="number"
              min="0.000001"
              step="any"
              value={typed('spend_amount_usd', k.spend_limit ? String(k.spend_limit.amount_usd) : '')}
              {...invalid('spend-amount', paramError('spend_limit'))}
            />
          </Field>
          <Field id="spend-period" label="Period">
            <select id="spend-period" name="spend_period">
              {SPEND_PERIODS.map((p) => (
                <option value={p} selected={typed('spend_period', k.spend_limit?.period ?? 'month') === p}>
                  {PERIOD_WORDS[p]}
                </option>
              ))}
            </select>
          </Field>
          <Field
            id="key-rpm"
            label="Requests per minute"
            hint="At most the plan's; empty: the plan's"
            error={paramError('rate_limit')}
          >
            <input
              id="key-rpm"
              name="requests_per_minute"
              type="number"
              min="1"
              step="1"
              value={typed('requests_per_minute', String(k.rate_limit?.requests_per_minute ?? ''))}
              {...invalid('key-rpm', paramError('rate_limit'))}
            />
          </Field>
          <Field id="key-tpm" label="Tokens per minute" hint="At most the plan's; empty: the plan's">
            <input
              id="key-tpm"
              name="tokens_per_minute"
              type="number"
              min="1"
              step="1"
              value={typed('tokens_per_minute', String(k.rate_limit?.tokens_per_minute ?? ''))}
            />
          </Field>
        </div>
        <button type="submit">Save limits</button>
      </form>
    </section>
  )
}

/** What the limits form's fields mean as a PATCH body (an empty field removes that limit). */
function limitsPatch(c: ConsoleContext) {
  const models = formList(c, 'allowed_models')
  const amount = formString(c, 'spend_amount_usd').trim()
  const rpm = formString(c, 'requests_per_minute').trim()
  const tpm = formString(c, 'tokens_per_minute').trim()
  const rate = {
    ...(rpm ? { requests_per_minute: Number(rpm) } : {}),
    ...(tpm ? { tokens_per_minute: Number(tpm) } : {}),
  }
  return {
    allowed_models: models.length > 0 ? models : null,
    spend_limit: amount
      ? { amount_usd: Number(amount), period: formString(c, 'spend_period') || 'month' }
      : null,
    rate_limit: rpm || tpm ? rate : null,
  }
}

async function render(c: ConsoleContext, id: string, state: PageState = {}, status = 200) {
  const found = await c.get('api').get<ApiKey>(`/platform/v1/api-keys/${id}`)
  const frame = await frameOf(c, found.ok ? `API key ${found.body.name}` : 'API key', 'api-keys')
  if (!found.ok) {
    return html(
      c,
      <Frame frame={frame}>
        <h1>API key</h1>
        <Notice kind="error">{found.error.message}</Notice>
        <p>
          <a href="/console/api-keys">All API keys</a>
        </p>
      </Frame>,
      found.status,
    )
  }
  const k = found.body
  return html(
    c,
    <Frame frame={frame}>
      <p>
        <a href="/console/api-keys">← API keys</a>
      </p>
      <h1>
        {k.name} <code class="hint">{k.redacted_value}</code>
      </h1>
      <p class="lead">
        A {k.mode} key, {k.status}, role {k.role}, created {formatDate(k.created_at)}; last used{' '}
        {formatDate(k.last_used_at)}. <a href={`/console/usage?key_id=${k.id}`}>Its usage</a>
        {' · '}
        <a href={`/console/api-keys/${k.id}/usage-statement`} download={`usage-statement-${k.id}.json`}>
          Download its signed usage statement
        </a>
      </p>
      <FlashNotice flash={state.notice} />
      <SpendBar k={k} />
      {isAdmin(c) ? (
        <LimitsForm k={k} csrf={frame.csrf} err={state.error} />
      ) : (
        <section aria-labelledby="limits-heading">
          <h2 id="limits-heading">Limits</h2>
          <p>
            Models: {k.allowed_models?.join(', ') ?? 'every model the plan allows'}. Spend:{' '}
            {k.spend_limit
              ? `${usd(k.spend_limit.amount_usd)} ${PERIOD_WORDS[k.spend_limit.period]}`
              : 'no limit'}
            . Rates: {k.rate_limit?.requests_per_minute ?? 'the plan’s'} requests and{' '}
            {k.rate_limit?.tokens_per_minute ?? 'the plan’s'} tokens per minute.
          </p>
          <p class="muted">Only workspace owners and admins change a key's limits.</p>
        </section>
      )}
    </Frame>,
    status,
  )
}

export function apiKeyDetailPages(app: Hono<ConsoleApp>): void {
  app.get('/api-keys/:id', (c) => {
    const id = c.req.param('id')
    if (!UUID.test(id)) return c.notFound()
    return render(c, id, c.req.query('saved') ? { notice: { kind: 'ok', text: 'Limits saved.' } } : {})
  })

  app.post('/api-keys/:id/limits', async (c) => {
    const id = c.req.param('id')
    if (!UUID.test(id)) return c.notFound()
    const changed = await c.get('api').send<ApiKey>('PATCH', `/platform/v1/api-keys/${id}`, limitsPatch(c))
    if (!changed.ok) {
      return render(
        c,
        id,
        { error: { message: changed.error.message, param: changed.error.param, values: c.get('form') } },
        changed.status,
      )
    }
    return c.redirect(`/console/api-keys/${id}?saved=1`, 303)
  })

  // The statement exactly as the API signed it, as a file: verifiable offline (docs/plans.md).
  app.get('/api-keys/:id/usage-statement', async (c) => {
    const id = c.req.param('id')
    if (!UUID.test(id)) return c.notFound()
    const period = c.req.query('period')
    const statement = await c
      .get('api')
      .get<unknown>(
        `/platform/v1/api-keys/${id}/usage-statement${period ? `?period=${encodeURIComponent(period)}` : ''}`,
      )
    if (!statement.ok)
      return render(c, id, { notice: { kind: 'error', text: statement.error.message } }, statement.status)
    return c.body(JSON.stringify(statement.body, null, 2), 200, {
      'content-type': 'application/json; charset=utf-8',
      'content-disposition': `attachment; filename="usage-statement-${id}.json"`,
    })
  })
}
