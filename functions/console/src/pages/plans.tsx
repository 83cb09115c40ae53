/**
 * Plans and billing: the pages the upgrade actions of action-required bodies (402/403/429) link to
 * (shared/plans/upgrade-decision.ts builds `<console>/billing/plans?plan=<id>`, `/billing/usage-credits`,
 * `/billing/credits`, `/billing/spend-cap`, `/billing/add-ons`, `/contact-sales`). Owners switch
 * between self-serve plans here; owners and admins turn usage credits on and set the spend cap.
 * This deployment has no payment provider: buying credits and add-ons is done with sales.
 */
import type { Hono } from 'hono'
import type { Billing, Plan, PlanList } from '../api-types'
import type { ConsoleApp, ConsoleContext } from '../console.context'
import { CsrfField, Frame, formatCents, formatDate, formatNumber, Notice } from '../layout'
import { formString, frameOf, html, isAdmin } from '../page'

function describeAllowance(plan: Plan): string {
  return plan.monthly_token_allowance === null
    ? 'unlimited tokens'
    : `${formatNumber(plan.monthly_token_allowance)} tokens / month`
}

const PlanCard = ({
  plan,
  current,
  suggested,
  canSwitch,
  csrf,
}: {
  plan: Plan
  current: boolean
  suggested: boolean
  canSwitch: boolean
  csrf: string
}) => (
  <section
    class="card"
    aria-current={current ? 'true' : undefined}
    aria-labelledby={`plan-${plan.id}`}
    data-plan={plan.id}
  >
    <h3 id={`plan-${plan.id}`}>
      {plan.name}
      {current ? ' — your plan' : suggested ? ' — suggested' : ''}
    </h3>
    <p class="big">
      {plan.monthly_price_cents === null ? 'Contract' : `${formatCents(plan.monthly_price_cents)}`}
      <span class="muted">{plan.monthly_price_cents === null ? '' : ' / month'}</span>
    </p>
    <ul>
      <li>{describeAllowance(plan)}</li>
      <li>Models: {plan.models.join(', ')}</li>
      <li>Features: {plan.features.join(', ') || '—'}</li>
      <li>
        {formatNumber(plan.requests_per_minute)} requests / min · context{' '}
        {formatNumber(plan.context_limit_tokens)}
      </li>
      <li>
        Included credits {formatCents(plan.included_credits_cents)}
        {plan.usage_credits ? ' · usage credits' : ''}
      </li>
      <li>{formatNumber(plan.document_allowance)} documents</li>
    </ul>
    {current ? null : plan.self_serve ? (
      canSwitch ? (
        <form
          method="post"
          action="/console/billing/plan"
          data-confirm={`Switch the workspace to the ${plan.name} plan?`}
        >
          <CsrfField csrf={csrf} />
          <input type="hidden" name="plan_id" value={plan.id} />
          <button type="submit" class={suggested ? '' : 'secondary'}>
            Switch to {plan.name}
          </button>
        </form>
      ) : (
        <p class="muted">Ask an owner to switch plans.</p>
      )
    ) : (
      <a class="button secondary" href="/console/contact-sales">
        Contact sales
      </a>
    )}
  </section>
)

async function renderPlans(c: ConsoleContext, notice?: { kind: 'ok' | 'error'; text: string }, status = 200) {
  const api = c.get('api')
  const [plans, billing] = await Promise.all([
    api.get<PlanList>('/platform/v1/plans'),
    api.get<Billing>('/platform/v1/billing'),
  ])
  const frame = await frameOf(c, 'Plans and billing', 'plans')
  const suggested = c.req.query('plan') ?? ''
  const owner = frame.workspace.role === 'owner'
  return html(
    c,
    <Frame frame={frame}>
      <h1>Plans and billing</h1>
      {notice ? <Notice kind={notice.kind}>{notice.text}</Notice> : null}
      {billing.ok ? (
        <p class="lead">
          You are on the <strong>{billing.body.plan.name}</strong> plan. This period (
          {formatDate(billing.body.period.start)} to {formatDate(billing.body.period.end)}):{' '}
          {formatNumber(billing.body.tokens_used)} live tokens used, credits{' '}
          {formatCents(billing.body.credits_balance_cents)}.
        </p>
      ) : null}
      {plans.ok ? (
        <div class="plan-grid">
          {plans.body.data.map((plan) => (
            <PlanCard
              plan={plan}
              current={plan.id === frame.workspace.plan.id}
              suggested={plan.id === suggested}
              canSwitch={owner}
              csrf={frame.csrf}
            />
          ))}
        </div>
      ) : (
        <Notice kind="error">{plans.error.message}</Notice>
      )}
      <h2>More</h2>
      <ul>
        <li>
          <a href="/console/billing/usage-credits">Usage credits and the spend cap</a>
        </li>
        <li>
          <a href="/console/billing/credits">Credit balance</a>
        </li>
        <li>
          <a href="/console/billing/add-ons">Allowance add-ons</a>
        </li>
      </ul>
    </Frame>,
    status,
  )
}

async function renderSettings(
  c: ConsoleContext,
  section: 'usage-credits' | 'spend-cap' | 'credits' | 'add-ons',
  notice?: { kind: 'ok' | 'error'; text: string },
  status = 200,
) {
  const billing = await c.get('api').get<Billing>('/platform/v1/billing')
  const frame = await frameOf(c, 'Billing settings', 'plans')
  const b = billing.ok ? billing.body : null
  const admin = isAdmin(c)
  const titles = {
    'usage-credits': 'Usage credits',
    'spend-cap': 'Spend cap',
    credits: 'Credit balance',
    'add-ons': 'Allowance add-ons',
  } as const
  return html(
    c,
    <Frame frame={frame}>
      <h1>{titles[section]}</h1>
      {notice ? <Notice kind={notice.kind}>{notice.text}</Notice> : null}
      {!billing.ok ? <Notice kind="error">{billing.error.message}</Notice> : null}
      {b ? (
        <section class="panel" aria-labelledby="now-h">
          <h2 id="now-h">This period</h2>
          <dl class="facts">
            <dt>Plan</dt>
            <dd>
              {b.plan.name} (<a href="/console/billing/plans">compare</a>)
            </dd>
            <dt>Live tokens used</dt>
            <dd>
              {formatNumber(b.tokens_used)}
              {b.tokens_remaining === null ? ' (unlimited)' : ` · ${formatNumber(b.tokens_remaining)} left`}
            </dd>
            <dt>Credit balance</dt>
            <dd>{formatCents(b.credits_balance_cents)}</dd>
            <dt>Overage spent</dt>
            <dd>{formatCents(b.overage_cents)}</dd>
            <dt>Usage credits</dt>
            <dd>{b.plan.usage_credits ? (b.usage_credits_enabled ? 'on' : 'off') : 'not in this plan'}</dd>
            <dt>Spend cap</dt>
            <dd>
              {b.effective_spend_cap_cents === null ? 'none' : formatCents(b.effective_spend_cap_cents)}
              {b.spend_cap_cents === null ? ' (plan default)' : ''}
            </dd>
          </dl>
        </section>
      ) : null}
      {b && (section === 'usage-credits' || section === 'spend-cap') ? (
        admin ? (
          b.plan.usage_credits ? (
            <form
              method="post"
              action={`/console/billing/${section}`}
              class="panel"
              aria-label="Billing settings"
            >
              <CsrfField csrf={frame.csrf} />
              <fieldset class="choices">
                <legend>Pay for usage beyond the allowance from credits</legend>
                <label>
                  <input
                    type="radio"
                    name="usage_credits_enabled"
                    value="true"
                    checked={b.usage_credits_enabled}
                  />{' '}
                  on
                </label>
                <label>
                  <input
                    type="radio"
                    name="usage_credits_enabled"
                    value="false"
                    checked={!b.usage_credits_enabled}
                  />{' '}
                  off
                </label>
              </fieldset>
              <div class="field">
                <label for="spend-cap">
                  Monthly spend cap in dollars
                  <span class="hint">
                    Empty: the plan's default (
                    {b.plan.overage_cap_cents === null ? 'none' : formatCents(b.plan.overage_cap_cents)})
                  </span>
                </label>
                <input
                  id="spend-cap"
                  name="spend_cap_dollars"
                  type="number"
                  min={0}
                  step="0.01"
                  value={b.spend_cap_cents === null ? '' : (b.spend_cap_cents / 100).toFixed(2)}
                />
              </div>
              <button type="submit">Save</button>
            </form>
          ) : (
            <Notice kind="warn">
              The {b.plan.name} plan has no usage credits. <a href="/console/billing/plans">Upgrade</a> to a
              plan that has them.
            </Notice>
          )
        ) : (
          <p class="muted">Only owners and admins change billing settings.</p>
        )
      ) : null}
      {section === 'credits' || section === 'add-ons' ? (
        <Notice kind="warn">
          This deployment has no payment provider connected, so{' '}
          {section === 'credits' ? 'credits' : 'add-ons'} are bought through sales:{' '}
          <a href="/console/contact-sales">contact sales</a>, or{' '}
          <a href="/console/billing/plans">move to a plan</a> with a larger allowance.
        </Notice>
      ) : null}
    </Frame>,
    status,
  )
}

export function planPages(app: Hono<ConsoleApp>): void {
  app.get('/billing/plans', (c) => {
    const changed = c.req.query('changed')
    return renderPlans(
      c,
      changed ? { kind: 'ok', text: `The workspace is now on the ${changed} plan.` } : undefined,
    )
  })

  app.post('/billing/plan', async (c) => {
    const changed = await c.get('api').send<{ plan: { name: string } }>('POST', '/platform/v1/billing/plan', {
      plan_id: formString(c, 'plan_id'),
    })
    if (!changed.ok) return renderPlans(c, { kind: 'error', text: changed.error.message }, changed.status)
    return c.redirect(`/console/billing/plans?changed=${encodeURIComponent(changed.body.plan.name)}`, 303)
  })

  for (const section of ['usage-credits', 'spend-cap', 'credits', 'add-ons'] as const) {
    app.get(`/billing/${section}`, (c) =>
      renderSettings(c, section, c.req.query('saved') ? { kind: 'ok', text: 'Saved.' } : undefined),
    )
  }
  for (const section of ['usage-credits', 'spend-cap'] as const) {
    app.post(`/billing/${section}`, async (c) => {
      const dollars = formString(c, 'spend_cap_dollars').trim()
      const cents = dollars === '' ? null : Math.round(Number(dollars) * 100)
      if (cents !== null && !Number.isFinite(cents)) {
        return renderSettings(
          c,
          section,
          { kind: 'error', text: `The spend cap must be a number of dollars (got ${dollars}).` },
          400,
        )
      }
      const saved = await c.get('api').send('PATCH', '/platform/v1/billing', {
        usage_credits_enabled: formString(c, 'usage_credits_enabled') === 'true',
        spend_cap_cents: cents,
      })
      if (!saved.ok)
        return renderSettings(c, section, { kind: 'error', text: saved.error.message }, saved.status)
      return c.redirect(`/console/billing/${section}?saved=1`, 303)
    })
  }

  app.get('/contact-sales', async (c) => {
    const frame = await frameOf(c, 'Contact sales', 'plans')
    return html(
      c,
      <Frame frame={frame}>
        <h1>Contact sales</h1>
        <p>
          Enterprise plans, credits, allowance add-ons and contract pricing are arranged with sales. Write to
          your account team and quote your workspace id:
        </p>
        <p class="secret">
          <code>{frame.workspace.id}</code>
        </p>
        <p>
          <a href="/console/billing/plans">Back to plans</a>
        </p>
      </Frame>,
    )
  })
}
