/**
 * Crypto policy: the current policy, a preset picker with the audit/enforce switch (enforce asks
 * for confirmation and says what it does), a field editor that shows the server's validation
 * problems at the fields they name, the policy check tool, the algorithm registry, and the
 * enforcement decisions from the audit log, each with a button that verifies its inclusion proof
 * in the browser.
 */
import type { Hono } from 'hono'
import type {
  AlgorithmList,
  DecisionEvent,
  DecisionList,
  Policy,
  PolicyCheck,
  PolicyView,
} from '../api-types'
import { ApiRefusal, DataTable, Field, invalid } from '../components'
import type { ConsoleApp, ConsoleContext } from '../console.context'
import type { ApiResult } from '../console-api'
import { CsrfField, Frame, formatDate, Notice } from '../layout'
import { formString, frameOf, html, isAdmin } from '../page'

const PRESETS = ['default', 'strict', 'maximum', 'government'] as const
/** The registry's lifecycle statuses as a reader says them. */
const STATUS_WORDS: Record<AlgorithmList['data'][number]['status'], string> = {
  NIST_FINAL: 'NIST final',
  DRAFT: 'draft',
  DEPRECATED: 'deprecated',
}
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

function CurrentPolicy({ view, myUserId }: { view: PolicyView; myUserId: string | undefined }) {
  const p = view.policy
  return (
    <section class="panel" aria-labelledby="current-h">
      <h2 id="current-h">Current policy</h2>
      <dl class="facts">
        <dt>Preset</dt>
        <dd>
          {view.preset ?? 'none'}
          {view.customized ? ' (customized)' : ''}
          {view.source === 'default' ? ' (nothing stored: the Default preset applies)' : ''}
        </dd>
        <dt>Mode</dt>
        <dd>
          <span class={`badge ${p.mode}`}>{p.mode}</span> {p.enabled ? '' : '(disabled)'}{' '}
          {p.mode === 'enforce' ? 'violations are blocked (403)' : 'violations are logged and let through'}
        </dd>
        <dt>Minimum security level</dt>
        <dd>{p.minimumSecurityLevel}</dd>
        {LIST_FIELDS.map(([field, label]) => (
          <>
            <dt>{label}</dt>
            <dd>
              <code>{p[field].join(', ') || '—'}</code>
            </dd>
          </>
        ))}
        <dt>Token algorithms accepted</dt>
        <dd>
          <code>{view.token_algorithms.accepted.join(', ')}</code>
        </dd>
        <dt>Last change</dt>
        <dd>
          {formatDate(view.updated_at)} {view.updated_by ? `by ${changedBy(view, myUserId)}` : ''}
        </dd>
        <dt>Policy digest</dt>
        <dd>
          <code>{view.attestation.policy_digest}</code>
        </dd>
      </dl>
    </section>
  )
}

const ModeChoices = ({ mode, long }: { mode: Policy['mode']; long: boolean }) => (
  <fieldset class="choices">
    <legend>Mode</legend>
    <label>
      <input type="radio" name="mode" value="audit" checked={mode === 'audit'} /> audit
      {long ? ' (log only)' : ''}
    </label>
    <label>
      <input type="radio" name="mode" value="enforce" checked={mode === 'enforce'} /> enforce
      {long ? ' (block)' : ''}
    </label>
  </fieldset>
)

function PresetForm({ csrf, preset, p }: { csrf: string; preset: string | null; p: Policy }) {
  return (
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
        <CsrfField csrf={csrf} />
        <div class="form-grid">
          <Field id="preset" label="Preset">
            <select id="preset" name="preset">
              {PRESETS.map((name) => (
                <option value={name} selected={preset === name}>
                  {name}
                </option>
              ))}
            </select>
          </Field>
          <ModeChoices mode={p.mode} long={true} />
        </div>
        <Notice kind="warn">
          Enforce mode refuses every request and token that breaks the policy with 403. Check the algorithms
          your clients use first (the check tool below, and the decisions audit mode logged).
        </Notice>
        <button type="submit">Apply preset</button>
      </form>
    </>
  )
}

/** The field editor, with a refused change's values and each problem at the field it names. */
function FieldsForm({ csrf, p, refused }: { csrf: string; p: Policy; refused: PageState['refused'] }) {
  const problems = refused?.problems ?? []
  const fieldProblems = (field: string) => problems.filter((text) => text.includes(field)).join('; ')
  const typed = refused?.values
  const listValue = (field: (typeof LIST_FIELDS)[number][0]) => {
    const v = typed?.[field]
    return typeof v === 'string' ? v : p[field].join(', ')
  }
  return (
    <>
      <h2 id="fields-h">Edit fields</h2>
      <form
        method="post"
        action="/console/crypto-policy/fields"
        class="panel"
        aria-labelledby="fields-h"
        data-confirm="Switch to enforce mode? Non-compliant requests will be refused with 403."
        data-confirm-when="mode=enforce"
      >
        <CsrfField csrf={csrf} />
        <div class="form-grid">
          {LIST_FIELDS.map(([field, label]) => (
            <Field
              id={`f-${field}`}
              label={label}
              hint="Comma-separated registry names"
              error={fieldProblems(field)}
            >
              <textarea id={`f-${field}`} name={field} {...invalid(`f-${field}`, fieldProblems(field))}>
                {listValue(field)}
              </textarea>
            </Field>
          ))}
          <Field
            id="f-minimumSecurityLevel"
            label="Minimum security level (1–5)"
            error={fieldProblems('minimumSecurityLevel')}
          >
            <input
              id="f-minimumSecurityLevel"
              name="minimumSecurityLevel"
              type="number"
              min={1}
              max={5}
              value={String(typed?.minimumSecurityLevel ?? p.minimumSecurityLevel)}
              {...invalid('f-minimumSecurityLevel', fieldProblems('minimumSecurityLevel'))}
            />
          </Field>
          <ModeChoices mode={p.mode} long={false} />
          <fieldset class="choices">
            <legend>Rules</legend>
            {FLAG_FIELDS.map(([field, label]) => (
              <label>
                <input type="checkbox" name={field} value="true" checked={p[field]} /> {label}
              </label>
            ))}
          </fieldset>
        </div>
        <button type="submit">Save fields</button>
      </form>
    </>
  )
}

function CheckTool({
  algorithm,
  context,
  check,
}: {
  algorithm: string
  context: string
  check: ApiResult<PolicyCheck> | null
}) {
  return (
    <>
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
    </>
  )
}

function DecisionRow({
  index,
  outcome,
  decision,
}: {
  index: number
  outcome: string
  decision: DecisionEvent
}) {
  return (
    <tr data-decision-index={String(index)}>
      <td class="num">{index}</td>
      <td>
        <span class={`badge ${outcome}`}>{outcome}</span>
      </td>
      <td>
        <code>{decision.algorithm}</code>
        <span class="hint">{decision.context}</span>
      </td>
      <td title={`${decision.method} ${decision.path} ${decision.request_id}`}>
        {decision.method} <code>{decision.path}</code>
        <span class="hint mono">{decision.request_id}</span>
      </td>
      <td title={(decision.rules ?? []).map((r) => `${r.rule}: ${r.detail}`).join('\n')}>
        {(decision.rules ?? []).map((r) => r.rule).join(', ')}
      </td>
      <td>
        <button
          type="button"
          class="secondary small"
          data-verify-index={String(index)}
          data-request-id={decision.request_id}
          data-output={`proof-${index}`}
          aria-label={`Verify proof: log entry ${index}, request ${decision.request_id}`}
        >
          Verify proof
        </button>
        <output id={`proof-${index}`} class="verify-result" aria-live="polite" />
      </td>
    </tr>
  )
}

function Registry({ registry }: { registry: ApiResult<AlgorithmList> }) {
  return (
    <>
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
            <td>{STATUS_WORDS[a.status]}</td>
            <td class="num">{a.securityLevel ?? '—'}</td>
            <td>{a.replacement ? `${a.replacement} by ${a.deprecationDate}` : '—'}</td>
          </tr>
        )}
      />
    </>
  )
}

async function render(c: ConsoleContext, state: PageState = {}, status = 200) {
  const api = c.get('api')
  const algorithm = (c.req.query('algorithm') ?? '').trim()
  const context = CONTEXTS.find((x) => x === c.req.query('context')) ?? 'request_declared'
  const [policy, registry, decisions, check] = await Promise.all([
    api.get<PolicyView>('/platform/v1/crypto/policy'),
    api.get<AlgorithmList>('/platform/v1/crypto/algorithms'),
    api.get<DecisionList>('/platform/v1/crypto/decisions?limit=20'),
    algorithm
      ? api.get<PolicyCheck>(
          `/platform/v1/crypto/policy/check?algorithm=${encodeURIComponent(algorithm)}&context=${context}`,
        )
      : Promise.resolve(null),
  ])
  const frame = await frameOf(c, 'Crypto policy', 'crypto-policy')
  const p = policy.ok ? policy.body.policy : null
  const problems = state.refused?.problems ?? []
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
      {policy.ok ? <CurrentPolicy view={policy.body} myUserId={c.get('workspace').user?.id} /> : null}
      {isAdmin(c) && p ? (
        <>
          <PresetForm csrf={frame.csrf} preset={policy.ok ? policy.body.preset : null} p={p} />
          <FieldsForm csrf={frame.csrf} p={p} refused={state.refused} />
        </>
      ) : (
        <p class="muted">Only workspace owners and admins change the policy.</p>
      )}
      <CheckTool algorithm={algorithm} context={context} check={check} />
      <h2 id="decisions-h">Violations (from the audit log)</h2>
      <p class="muted">
        Each violation audit mode let through (logged) or enforce mode refused (blocked) is an entry of this
        workspace's audit log. “Verify proof” checks, in this browser, that the entry is in the log under a
        signed checkpoint.
      </p>
      <ApiRefusal result={decisions} what="Violations" />
      <DataTable
        label="Policy decisions"
        fixed={true}
        columns={[
          { label: 'Log index', num: true, rem: 6 },
          { label: 'Outcome', rem: 6 },
          'Algorithm',
          'Request',
          'Broken rules',
          { label: 'Proof', rem: 9 },
        ]}
        rows={decisions.ok ? decisions.body.data : []}
        empty="No violations recorded."
        row={(d) => (
          <DecisionRow index={d.index} outcome={d.outcome} decision={d.decision as DecisionEvent} />
        )}
      />
      <Registry registry={registry} />
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
