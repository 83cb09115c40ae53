/**
 * Crypto policy: the current policy, a preset picker with the audit/enforce switch (enforce asks
 * for confirmation and says what it does), a field editor that shows the server's validation
 * problems at the fields they name, the policy check tool, the algorithm registry, and the
 * enforcement decisions from the audit log, each with a button that verifies its inclusion proof
 * in the browser.
 */
import type { Hono } from 'hono'
import { ApiRefusal, DataTable, Field, invalid } from '../components'
import { type ConsoleApp, type ConsoleContext, formString, frameOf, html, isAdmin } from '../console.app'
import type { ApiResult } from '../console-api'
import { CsrfField, Frame, formatDate, Notice } from '../layout'

const PRESETS = ['default', 'strict', 'maximum', 'government'] as const
const CONTEXTS = [
  'request_declared',
  'token_signature',
  'document_signature',
  'key_exchange',
  'data_encryption',
  'hashing',
  'message_authentication',
] as const
const LIST_FIELDS = [
  ['allowedKemAlgorithms', 'Allowed KEMs'],
  ['allowedSignatureAlgorithms', 'Allowed signature algorithms'],
  ['allowedSymmetricAlgorithms', 'Allowed symmetric algorithms, hashes and MACs'],
  ['forbiddenAlgorithms', 'Forbidden algorithms'],
] as const
const FLAG_FIELDS = [
  ['enabled', 'Policy enabled'],
  ['requireNistFinal', 'Require NIST-final algorithms'],
  ['allowClassicalFallback', 'Allow classical fallback'],
  ['hybridModeRequired', 'Require hybrid key exchange'],
] as const

interface Policy {
  enabled: boolean
  mode: 'audit' | 'enforce'
  allowedKemAlgorithms: string[]
  allowedSignatureAlgorithms: string[]
  allowedSymmetricAlgorithms: string[]
  forbiddenAlgorithms: string[]
  minimumSecurityLevel: number
  requireNistFinal: boolean
  allowClassicalFallback: boolean
  hybridModeRequired: boolean
}

interface PolicyView {
  preset: string | null
  customized: boolean
  source: string
  policy: Policy
  token_algorithms: { accepted: string[]; compliant: string[] }
  updated_at: string | null
  updated_by: string | null
  updated_by_name: string | null
  attestation: { policy_digest: string }
}

/**
 * Who made the last change, by the name the API resolved in this workspace: the person's email
 * (or "you"), the key's or the service account's name; the raw actor id only when it has none.
 */
export function changedBy(
  view: Pick<PolicyView, 'updated_by' | 'updated_by_name'>,
  myUserId?: string,
): string {
  const actor = view.updated_by ?? ''
  const name = view.updated_by_name
  if (name === null) return actor
  if (actor.startsWith('user:')) return actor === `user:${myUserId}` ? `you (${name})` : name
  if (actor.startsWith('key:')) return `key “${name}”`
  if (actor.startsWith('sa:')) return `service account “${name}”`
  return name
}

interface Algorithm {
  id: string
  standardName: string
  type: string
  status: string
  securityLevel: number | null
  family: string
  replacement: string | null
  deprecationDate: string | null
}

interface Decision {
  index: number
  outcome: 'logged' | 'blocked'
  decision: {
    algorithm?: string
    context?: string
    mode?: string
    principal?: string
    request_id?: string
    method?: string
    path?: string
    rules?: { rule: string; detail: string }[]
  }
}

interface Check {
  algorithm: string
  requested: string
  allowed: boolean
  outcome: string
  in_enforce_mode: string
  rules: { rule: string; passed: boolean; detail: string }[]
}

interface PageState {
  notice?: { kind: 'ok' | 'error'; text: string }
  /** A refused change: the server's message and the problems it listed. */
  refused?: { message: string; problems: string[]; values?: Record<string, string | string[]> }
}

function problemsOf(result: ApiResult<unknown>): string[] {
  if (result.ok) return []
  const body = result.body as { policy_problems?: unknown } | null
  return Array.isArray(body?.policy_problems) ? body.policy_problems.map(String) : []
}

async function render(c: ConsoleContext, state: PageState = {}, status = 200) {
  const api = c.get('api')
  const algorithm = (c.req.query('algorithm') ?? '').trim()
  const context = CONTEXTS.find((x) => x === c.req.query('context')) ?? 'request_declared'
  const [policy, registry, decisions, check] = await Promise.all([
    api.get<PolicyView>('/platform/v1/crypto/policy'),
    api.get<{ data: Algorithm[] }>('/platform/v1/crypto/algorithms'),
    api.get<{ data: Decision[] }>('/platform/v1/crypto/decisions?limit=20'),
    algorithm
      ? api.get<Check>(
          `/platform/v1/crypto/policy/check?algorithm=${encodeURIComponent(algorithm)}&context=${context}`,
        )
      : Promise.resolve(null),
  ])
  const frame = await frameOf(c, 'Crypto policy', 'crypto-policy')
  const admin = isAdmin(c)
  const p = policy.ok ? policy.body.policy : null
  const problems = state.refused?.problems ?? []
  const fieldProblems = (field: string) => problems.filter((text) => text.includes(field))
  const typed = state.refused?.values
  const listValue = (field: keyof Policy) => {
    const v = typed?.[field]
    if (typeof v === 'string') return v
    const current = p?.[field]
    return Array.isArray(current) ? current.join(', ') : ''
  }
  return html(
    c,
    <Frame frame={frame}>
      <h1>Crypto policy</h1>
      {state.notice ? <Notice kind={state.notice.kind}>{state.notice.text}</Notice> : null}
      {state.refused ? (
        <Notice kind="error" title="The policy was not changed">
          <p>{state.refused.message}</p>
          {problems.length > 0 ? (
            <ul>
              {problems.map((text) => (
                <li>{text}</li>
              ))}
            </ul>
          ) : null}
        </Notice>
      ) : null}
      {!policy.ok ? <Notice kind="error">The policy could not be read: {policy.error.message}</Notice> : null}
      {policy.ok && p ? (
        <section class="panel" aria-labelledby="current-h">
          <h2 id="current-h">Current policy</h2>
          <dl class="facts">
            <dt>Preset</dt>
            <dd>
              {policy.body.preset ?? 'none'}
              {policy.body.customized ? ' (customized)' : ''}
              {policy.body.source === 'default' ? ' (nothing stored: the Default preset applies)' : ''}
            </dd>
            <dt>Mode</dt>
            <dd>
              <span class={`badge ${p.mode}`}>{p.mode}</span> {p.enabled ? '' : '(disabled)'}{' '}
              {p.mode === 'enforce'
                ? 'violations are blocked (403)'
                : 'violations are logged and let through'}
            </dd>
            <dt>Minimum security level</dt>
            <dd>{p.minimumSecurityLevel}</dd>
            {LIST_FIELDS.map(([field, label]) => (
              <>
                <dt>{label}</dt>
                <dd>
                  <code>{(p[field] as string[]).join(', ') || '—'}</code>
                </dd>
              </>
            ))}
            <dt>Token algorithms accepted</dt>
            <dd>
              <code>{policy.body.token_algorithms.accepted.join(', ')}</code>
            </dd>
            <dt>Last change</dt>
            <dd>
              {formatDate(policy.body.updated_at)}{' '}
              {policy.body.updated_by ? `by ${changedBy(policy.body, c.get('workspace').user?.id)}` : ''}
            </dd>
            <dt>Policy digest</dt>
            <dd>
              <code>{policy.body.attestation.policy_digest}</code>
            </dd>
          </dl>
        </section>
      ) : null}

      {admin && p ? (
        <>
          <h2 id="preset-h">Apply a preset</h2>
          <form
            method="post"
            action="/console/crypto-policy/preset"
            class="panel"
            aria-labelledby="preset-h"
            data-confirm="Switch to enforce mode? Requests and tokens that break the policy will be refused with 403 from now on, including access tokens signed with an algorithm the policy does not allow."
            data-confirm-when="mode=enforce"
          >
            <CsrfField csrf={frame.csrf} />
            <div class="form-grid">
              <Field id="preset" label="Preset">
                <select id="preset" name="preset">
                  {PRESETS.map((name) => (
                    <option value={name} selected={(policy.ok ? policy.body.preset : null) === name}>
                      {name}
                    </option>
                  ))}
                </select>
              </Field>
              <fieldset class="choices">
                <legend>Mode</legend>
                <label>
                  <input type="radio" name="mode" value="audit" checked={p.mode === 'audit'} /> audit (log
                  only)
                </label>
                <label>
                  <input type="radio" name="mode" value="enforce" checked={p.mode === 'enforce'} /> enforce
                  (block)
                </label>
              </fieldset>
            </div>
            <Notice kind="warn">
              Enforce mode refuses every request and token that breaks the policy with 403. Check the
              algorithms your clients use first (the check tool below, and the decisions audit mode logged).
            </Notice>
            <button type="submit">Apply preset</button>
          </form>

          <h2 id="fields-h">Edit fields</h2>
          <form
            method="post"
            action="/console/crypto-policy/fields"
            class="panel"
            aria-labelledby="fields-h"
            data-confirm="Switch to enforce mode? Non-compliant requests will be refused with 403."
            data-confirm-when="mode=enforce"
          >
            <CsrfField csrf={frame.csrf} />
            <div class="form-grid">
              {LIST_FIELDS.map(([field, label]) => {
                const own = fieldProblems(field).join('; ')
                return (
                  <Field id={`f-${field}`} label={label} hint="Comma-separated registry names" error={own}>
                    <textarea id={`f-${field}`} name={field} {...invalid(`f-${field}`, own)}>
                      {listValue(field)}
                    </textarea>
                  </Field>
                )
              })}
              <Field
                id="f-minimumSecurityLevel"
                label="Minimum security level (1–5)"
                error={fieldProblems('minimumSecurityLevel').join('; ')}
              >
                <input
                  id="f-minimumSecurityLevel"
                  name="minimumSecurityLevel"
                  type="number"
                  min={1}
                  max={5}
                  value={String(typed?.minimumSecurityLevel ?? p.minimumSecurityLevel)}
                  {...invalid('f-minimumSecurityLevel', fieldProblems('minimumSecurityLevel').join('; '))}
                />
              </Field>
              <fieldset class="choices">
                <legend>Mode</legend>
                <label>
                  <input type="radio" name="mode" value="audit" checked={p.mode === 'audit'} /> audit
                </label>
                <label>
                  <input type="radio" name="mode" value="enforce" checked={p.mode === 'enforce'} /> enforce
                </label>
              </fieldset>
              <fieldset class="choices">
                <legend>Rules</legend>
                {FLAG_FIELDS.map(([field, label]) => (
                  <label>
                    <input type="checkbox" name={field} value="true" checked={p[field] as boolean} /> {label}
                  </label>
                ))}
              </fieldset>
            </div>
            <button type="submit">Save fields</button>
          </form>
        </>
      ) : (
        <p class="muted">Only workspace owners and admins change the policy.</p>
      )}

      <h2 id="check-h">Check an algorithm</h2>
      <form method="get" action="/console/crypto-policy" class="filters" aria-labelledby="check-h">
        <Field id="algorithm" label="Algorithm">
          <input
            id="algorithm"
            name="algorithm"
            type="text"
            value={algorithm}
            placeholder="e.g. rsa-2048, ML-DSA-65"
          />
        </Field>
        <Field id="context" label="Used for">
          <select id="context" name="context">
            {CONTEXTS.map((x) => (
              <option value={x} selected={x === context}>
                {x}
              </option>
            ))}
          </select>
        </Field>
        <button type="submit" class="secondary">
          Check
        </button>
      </form>
      {check ? (
        check.ok ? (
          <div class="panel" role="status" data-check-result={check.body.outcome}>
            <p>
              <strong>{check.body.algorithm}</strong>:{' '}
              <span class={`badge ${check.body.allowed ? 'allowed' : 'blocked'}`}>
                {check.body.allowed ? 'allowed' : 'violation'}
              </span>{' '}
              — now {check.body.outcome}; in enforce mode {check.body.in_enforce_mode}.
            </p>
            <ul>
              {check.body.rules.map((r) => (
                <li>
                  {r.passed ? '✓' : '✗'} <code>{r.rule}</code>: {r.detail}
                </li>
              ))}
            </ul>
          </div>
        ) : (
          <Notice kind="error">{check.error.message}</Notice>
        )
      ) : null}

      <h2 id="decisions-h">Violations (from the audit log)</h2>
      <p class="muted">
        Each violation audit mode let through (logged) or enforce mode refused (blocked) is an entry of this
        workspace's audit log. “Verify proof” checks, in this browser, that the entry is in the log under a
        signed checkpoint.
      </p>
      <ApiRefusal result={decisions} what="Violations" />
      <DataTable
        label="Policy decisions"
        columns={['Log index', 'Outcome', 'Algorithm', 'Request', 'Broken rules', 'Proof']}
        rows={decisions.ok ? decisions.body.data : []}
        empty="No violations recorded."
        row={(d) => (
          <tr data-decision-index={String(d.index)}>
            <td>{d.index}</td>
            <td>
              <span class={`badge ${d.outcome}`}>{d.outcome}</span>
            </td>
            <td>
              <code>{d.decision.algorithm}</code>
              <span class="hint">{d.decision.context}</span>
            </td>
            <td>
              {d.decision.method} <code>{d.decision.path}</code>
              <span class="hint mono">{d.decision.request_id}</span>
            </td>
            <td>{(d.decision.rules ?? []).map((r) => r.rule).join(', ')}</td>
            <td>
              <button
                type="button"
                class="secondary small"
                data-verify-index={String(d.index)}
                data-request-id={d.decision.request_id}
                data-output={`proof-${d.index}`}
                aria-label={`Verify proof: log entry ${d.index}, request ${d.decision.request_id}`}
              >
                Verify proof
              </button>
              <output id={`proof-${d.index}`} class="verify-result" aria-live="polite" />
            </td>
          </tr>
        )}
      />

      <h2 id="registry-h">Algorithm registry</h2>
      <ApiRefusal result={registry} what="The algorithm registry" />
      <DataTable
        label="Algorithm registry"
        columns={[
          'Algorithm',
          'Standard name',
          'Type',
          'Status',
          { label: 'Level', num: true },
          'Replacement',
        ]}
        rows={registry.ok ? registry.body.data : []}
        empty="No algorithms."
        row={(a) => (
          <tr>
            <td>
              <code>{a.id}</code>
            </td>
            <td>{a.standardName}</td>
            <td>{a.type}</td>
            <td>{a.status}</td>
            <td class="num">{a.securityLevel ?? '—'}</td>
            <td>{a.replacement ? `${a.replacement} by ${a.deprecationDate}` : '—'}</td>
          </tr>
        )}
      />
    </Frame>,
    status,
  )
}

const list = (text: string) =>
  text
    .split(/[\s,]+/)
    .map((s) => s.trim())
    .filter(Boolean)

export function cryptoPolicyPages(app: Hono<ConsoleApp>): void {
  app.get('/crypto-policy', (c) => {
    const saved = c.req.query('saved')
    return render(c, saved ? { notice: { kind: 'ok', text: `Policy saved: ${saved}.` } } : {})
  })

  app.post('/crypto-policy/preset', async (c) => {
    const result = await c.get('api').send('PUT', '/platform/v1/crypto/policy', {
      preset: formString(c, 'preset'),
      mode: formString(c, 'mode') === 'enforce' ? 'enforce' : 'audit',
    })
    if (!result.ok) {
      return render(
        c,
        { refused: { message: result.error.message, problems: problemsOf(result) } },
        result.status,
      )
    }
    return c.redirect(
      `/console/crypto-policy?saved=${encodeURIComponent(`${formString(c, 'preset')} preset, ${formString(c, 'mode')} mode`)}`,
      303,
    )
  })

  app.post('/crypto-policy/fields', async (c) => {
    const body: Record<string, unknown> = {
      mode: formString(c, 'mode') === 'enforce' ? 'enforce' : 'audit',
      minimumSecurityLevel: Number(formString(c, 'minimumSecurityLevel')),
    }
    for (const [field] of LIST_FIELDS) body[field] = list(formString(c, field))
    for (const [field] of FLAG_FIELDS) body[field] = formString(c, field) === 'true'
    const result = await c.get('api').send('PATCH', '/platform/v1/crypto/policy', body)
    if (!result.ok) {
      return render(
        c,
        { refused: { message: result.error.message, problems: problemsOf(result), values: c.get('form') } },
        result.status,
      )
    }
    return c.redirect('/console/crypto-policy?saved=fields', 303)
  })
}
