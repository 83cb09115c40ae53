/**
 * Overview: the plan, this period's allowance used and remaining, credits and overage, the current
 * mode's keys and the last two weeks of tokens in that mode.
 */
import type { Hono } from 'hono'
import type { ApiKeyList, Billing, UsageReport } from '../api-types'
import { BarChart, lastDays, toSeries } from '../charts'
import type { ConsoleApp } from '../console.context'
import { Frame, formatCents, formatDate, formatNumber, Notice } from '../layout'
import { frameOf, html } from '../page'

export function overviewPages(app: Hono<ConsoleApp>): void {
  app.get('/overview', async (c) => {
    const api = c.get('api')
    const mode = c.get('mode')
    const [billing, usage, keys] = await Promise.all([
      api.get<Billing>('/platform/v1/billing'),
      api.get<UsageReport>(`/platform/v1/usage?days=14&mode=${mode}`),
      api.get<ApiKeyList>(`/platform/v1/api-keys?mode=${mode}&include_inactive=false`),
    ])
    const days = lastDays(14)
    const frame = await frameOf(c, 'Overview', 'overview')
    const b = billing.ok ? billing.body : null
    const allowance = b?.plan.monthly_token_allowance ?? null
    return html(
      c,
      <Frame frame={frame}>
        <h1>Overview</h1>
        <p class="lead">
          {frame.workspace.name} — showing <strong>{mode}</strong> mode.{' '}
          {mode === 'test' ? 'Test usage is never billed.' : 'Live usage counts against the plan.'}
        </p>
        {!billing.ok ? (
          <Notice kind="error">Billing could not be read: {billing.error.message}</Notice>
        ) : null}
        {b ? (
          <div class="cards">
            <section class="card" aria-labelledby="plan-h">
              <h2 id="plan-h">Plan</h2>
              <p class="big">{b.plan.name}</p>
              <p class="muted">
                {b.plan.monthly_price_cents === null
                  ? 'contract'
                  : `${formatCents(b.plan.monthly_price_cents)} / month`}{' '}
                · <a href="/console/billing/plans">compare plans</a>
              </p>
            </section>
            <section class="card" aria-labelledby="allowance-h">
              <h2 id="allowance-h">Live tokens this month</h2>
              <p class="big">{formatNumber(b.tokens_used)}</p>
              {allowance === null ? (
                <p class="muted">Unlimited allowance</p>
              ) : (
                <>
                  <meter
                    min={0}
                    max={allowance}
                    value={Math.min(b.tokens_used, allowance)}
                    high={allowance * 0.8}
                    aria-label="Share of the monthly allowance used"
                  />
                  <p class="muted">
                    {formatNumber(b.tokens_remaining ?? 0)} of {formatNumber(allowance)} left · resets{' '}
                    {formatDate(b.period.end)}
                  </p>
                </>
              )}
            </section>
            <section class="card" aria-labelledby="credits-h">
              <h2 id="credits-h">Credits</h2>
              <p class="big">{formatCents(b.credits_balance_cents)}</p>
              <p class="muted">
                Overage this month {formatCents(b.overage_cents)} · usage credits{' '}
                {b.usage_credits_enabled ? 'on' : 'off'} · <a href="/console/billing/usage-credits">manage</a>
              </p>
            </section>
            <section class="card" aria-labelledby="keys-h">
              <h2 id="keys-h">Working {mode} keys</h2>
              <p class="big">{keys.ok ? keys.body.data.length : '—'}</p>
              <p class="muted">
                <a href="/console/api-keys">Manage API keys</a>
              </p>
            </section>
          </div>
        ) : null}
        <h2>Last 14 days</h2>
        {usage.ok ? (
          <BarChart
            id="overview-tokens"
            title={`Tokens (${mode})`}
            days={days}
            unit="tokens"
            series={toSeries(
              days,
              usage.body.data.filter((r) => r.unit === 'tokens'),
              (r) => r.model,
              (r) => r.day,
              (r) => r.prompt_tokens + r.completion_tokens,
            )}
          />
        ) : (
          <Notice kind="error">Usage could not be read: {usage.error.message}</Notice>
        )}
        <p>
          <a href="/console/usage">All usage, by key, with the request log</a>
        </p>
      </Frame>,
    )
  })
}
