/**
 * API keys: the keys of the current mode (test or live) with status, last use and expiry; create,
 * rotate (with a grace period) and revoke for owners and admins. A new secret is shown once, in
 * the answer to the form that made it (never in a URL, never stored), with a copy button.
 */
import type { Hono } from 'hono'
import { SCOPES } from '../../../../shared/auth/scopes'
import type { ApiKey, ApiKeyList, ApiKeyRotated, ApiKeyWithSecret } from '../api-types'
import {
  Actions,
  DataTable,
  Field,
  type Flash,
  FlashNotice,
  invalid,
  PostAction,
  SecretOnce,
} from '../components'
import type { ConsoleApp, ConsoleContext } from '../console.context'
import type { ApiResult } from '../console-api'
import { CsrfField, Frame, formatDate, formatDay, Notice } from '../layout'
import { formList, formString, frameOf, html, isAdmin } from '../page'

interface NewSecret {
  key: string
  name: string
  what: string
}

interface PageState {
  secret?: NewSecret
  notice?: Flash
  /** A refused create: the server's message, the field it names, and what was typed. */
  createError?: { message: string; param: string | null; values: Record<string, string | string[]> }
}

/** How long the old key keeps working after a rotation (the select beside Rotate). */
const GRACE_CHOICES = [
  { seconds: 0, label: 'no grace' },
  { seconds: 3600, label: 'grace 1 h' },
  { seconds: 86_400, label: 'grace 1 day' },
  { seconds: 7 * 86_400, label: 'grace 7 days' },
] as const

const ROLES = ['member', 'admin', 'owner'] as const

/** One key's row; owners and admins get rotate and revoke for keys of a role up to theirs. */
function KeyRow({ k, csrf, admin, myRank }: { k: ApiKey; csrf: string; admin: boolean; myRank: number }) {
  const live = k.status === 'active' || k.status === 'expiring'
  return (
    <tr data-key-id={k.id}>
      <td title={`${k.name} ${k.redacted_value}, created ${formatDate(k.created_at)}`}>
        <a href={`/console/api-keys/${k.id}`}>{k.name}</a>{' '}
        <span class="hint">
          <code>…{k.suffix}</code>
        </span>
      </td>
      <td>
        <span class={`badge ${k.status}`}>{k.status}</span>
        {k.replaced_by ? <span class="hint">rotated</span> : null}
      </td>
      <td title={k.scopes.join(', ') || 'all scopes'}>
        {k.role}
        <span class="hint">{k.scopes.length ? k.scopes.join(', ') : 'all scopes'}</span>
      </td>
      <td>{formatDate(k.last_used_at)}</td>
      <td title={formatDate(k.revoked_at ?? k.expires_at)}>
        {k.revoked_at ? `revoked ${formatDay(k.revoked_at)}` : formatDay(k.expires_at)}
      </td>
      {admin ? (
        <td>
          {live && ROLES.indexOf(k.role) <= myRank ? (
            <Actions>
              {k.replaced_by ? null : (
                <PostAction
                  action={`/console/api-keys/${k.id}/rotate`}
                  csrf={csrf}
                  label="Rotate"
                  name={`Rotate ${k.name}`}
                >
                  <label class="visually-hidden" for={`grace-${k.id}`}>
                    Grace period for {k.name}
                  </label>
                  <select id={`grace-${k.id}`} name="grace_period_seconds">
                    {GRACE_CHOICES.map((g) => (
                      <option value={String(g.seconds)} selected={g.seconds === 86_400}>
                        {g.label}
                      </option>
                    ))}
                  </select>{' '}
                </PostAction>
              )}
              <PostAction
                action={`/console/api-keys/${k.id}/revoke`}
                csrf={csrf}
                label="Revoke"
                name={`Revoke ${k.name}`}
                kind="danger"
                confirm={`Revoke “${k.name}”? Requests with it are refused from now on.`}
              />
            </Actions>
          ) : (
            <span class="muted">—</span>
          )}
        </td>
      ) : null}
    </tr>
  )
}

const CREATE_FIELDS = ['name', 'mode', 'role', 'scopes', 'expires_at', 'expires_in_days']

/** The create form, with a refused create's values and the server's message at the field it names. */
function CreateKeyForm({
  csrf,
  mode,
  myRank,
  err,
}: {
  csrf: string
  mode: string
  myRank: number
  err: PageState['createError']
}) {
  const value = (name: string) => {
    const v = err?.values[name]
    return typeof v === 'string' ? v : ''
  }
  const chosenScopes = new Set(err ? formListOf(err.values.scopes) : [])
  /** The server's message when it names this field (`scopes[2]` names `scopes`). */
  const paramError = (param: string) =>
    err && (err.param ?? '').split(/[.[]/)[0] === param ? err.message : null
  const fieldError = (param: string) =>
    paramError(param) ? (
      <span class="hint error-text" id={`${param}-error`} role="alert">
        {err?.message}
      </span>
    ) : null
  return (
    <section aria-labelledby="create-heading">
      <h2 id="create-heading">Create a key</h2>
      {err && !CREATE_FIELDS.includes((err.param ?? '').split(/[.[]/)[0] ?? '') ? (
        <Notice kind="error">{err.message}</Notice>
      ) : null}
      <form method="post" action="/console/api-keys" class="panel">
        <CsrfField csrf={csrf} />
        <div class="form-grid">
          <Field id="key-name" label="Name" error={paramError('name')}>
            <input
              id="key-name"
              name="name"
              type="text"
              required
              maxlength={120}
              value={value('name')}
              {...invalid('key-name', paramError('name'))}
            />
          </Field>
          <fieldset class="choices">
            <legend>Mode</legend>
            {(['test', 'live'] as const).map((m) => (
              <label>
                <input type="radio" name="mode" value={m} checked={(value('mode') || mode) === m} /> {m}
              </label>
            ))}
            {fieldError('mode')}
          </fieldset>
          <Field
            id="key-role"
            label="Role"
            hint="What the key may administer (at most your own role)"
            error={paramError('role')}
          >
            <select id="key-role" name="role" {...invalid('key-role', paramError('role'))}>
              {ROLES.filter((_, i) => i <= myRank).map((r) => (
                <option value={r} selected={(value('role') || 'member') === r}>
                  {r}
                </option>
              ))}
            </select>
          </Field>
          <Field
            id="key-expiry"
            label="Expires"
            hint="Leave empty for no expiry"
            error={paramError('expires_at')}
          >
            <input
              id="key-expiry"
              name="expires_on"
              type="date"
              value={value('expires_on')}
              {...invalid('key-expiry', paramError('expires_at'))}
            />
          </Field>
        </div>
        <fieldset class="choices">
          <legend>Scopes (none ticked: everything the role allows)</legend>
          {Object.entries(SCOPES).map(([scope, what]) => (
            <label title={what}>
              <input type="checkbox" name="scopes" value={scope} checked={chosenScopes.has(scope)} />{' '}
              <code>{scope}</code>
            </label>
          ))}
          {fieldError('scopes')}
        </fieldset>
        <button type="submit">Create key</button>
      </form>
    </section>
  )
}

async function render(c: ConsoleContext, state: PageState = {}, status = 200) {
  const mode = c.get('mode')
  const listed = await c.get('api').get<ApiKeyList>(`/platform/v1/api-keys?mode=${mode}`)
  const keys = listed.ok ? listed.body.data : []
  const admin = isAdmin(c)
  const myRank = ROLES.indexOf(c.get('workspace').role)
  const frame = await frameOf(c, 'API keys', 'api-keys')
  return html(
    c,
    <Frame frame={frame}>
      <h1>API keys</h1>
      <p class="lead">
        {mode === 'test'
          ? 'Test keys (svc_sk_test_…) are answered by the built-in simulated model and never billed.'
          : 'Live keys (svc_sk_live_…) reach the configured model providers and are billed.'}{' '}
        Switch the mode at the top to see the other keys.
      </p>
      {state.secret ? (
        <SecretOnce title={`${state.secret.what}: copy the secret now`} secret={state.secret.key}>
          <p>
            This is the only time the secret of “{state.secret.name}” is shown. Store it in a secret manager.
          </p>
        </SecretOnce>
      ) : null}
      <FlashNotice flash={state.notice} />
      {!listed.ok ? <Notice kind="error">The keys could not be listed: {listed.error.message}</Notice> : null}
      <DataTable
        label={`${mode} API keys`}
        caption={`${keys.length} ${mode} key${keys.length === 1 ? '' : 's'}${admin ? '' : ' (members see the keys they created and the key they use)'}`}
        fixed={true}
        columns={[
          'Name and key',
          { label: 'Status', rem: 7 },
          { label: 'Role and scopes', rem: 9 },
          { label: 'Last used', rem: 12 },
          { label: 'Expires', rem: 7 },
          admin ? { label: 'Actions', rem: 18 } : null,
        ]}
        rows={keys}
        empty={`No ${mode} keys yet.`}
        row={(k) => <KeyRow k={k} csrf={frame.csrf} admin={admin} myRank={myRank} />}
      />
      {admin ? (
        <CreateKeyForm csrf={frame.csrf} mode={mode} myRank={myRank} err={state.createError} />
      ) : (
        <p class="muted">Only workspace owners and admins create, rotate and revoke keys.</p>
      )}
    </Frame>,
    status,
  )
}

function formListOf(value: string | string[] | undefined): string[] {
  return value === undefined ? [] : Array.isArray(value) ? value : [value]
}

function failure(result: ApiResult<unknown>): { kind: 'error'; text: string } | null {
  return result.ok ? null : { kind: 'error', text: `${result.error.message} (${result.error.code})` }
}

export function apiKeyPages(app: Hono<ConsoleApp>): void {
  app.get('/api-keys', (c) => {
    const done = c.req.query('revoked')
    return render(
      c,
      done ? { notice: { kind: 'ok', text: `Key ${done} revoked. Requests with it are refused.` } } : {},
    )
  })

  app.post('/api-keys', async (c) => {
    const expiresOn = formString(c, 'expires_on')
    const body = {
      name: formString(c, 'name'),
      mode: formString(c, 'mode'),
      role: formString(c, 'role') || 'member',
      scopes: formList(c, 'scopes'),
      // A date picked in the form ends at the end of that day (UTC).
      ...(expiresOn
        ? { expires_at: /^\d{4}-\d{2}-\d{2}$/.test(expiresOn) ? `${expiresOn}T23:59:59Z` : expiresOn }
        : {}),
    }
    const created = await c.get('api').send<ApiKeyWithSecret>('POST', '/platform/v1/api-keys', body)
    if (!created.ok) {
      return render(
        c,
        {
          createError: { message: created.error.message, param: created.error.param, values: c.get('form') },
        },
        created.status,
      )
    }
    return render(
      c,
      {
        secret: {
          key: created.body.key,
          name: created.body.name,
          what: `New ${created.body.mode} key created`,
        },
      },
      201,
    )
  })

  app.post('/api-keys/:id/rotate', async (c) => {
    const grace = Number(formString(c, 'grace_period_seconds') || '86400')
    const rotated = await c
      .get('api')
      .send<ApiKeyRotated>('POST', `/platform/v1/api-keys/${encodeURIComponent(c.req.param('id'))}/rotate`, {
        grace_period_seconds: grace,
      })
    if (!rotated.ok) return render(c, { notice: failure(rotated)! }, rotated.status)
    return render(c, {
      secret: {
        key: rotated.body.key.key,
        name: rotated.body.key.name,
        what: `Rotated; the old secret works until ${formatDate(rotated.body.previous.expires_at)}`,
      },
    })
  })

  app.post('/api-keys/:id/revoke', async (c) => {
    const revoked = await c
      .get('api')
      .send<ApiKey>('DELETE', `/platform/v1/api-keys/${encodeURIComponent(c.req.param('id'))}`)
    if (!revoked.ok) return render(c, { notice: failure(revoked)! }, revoked.status)
    return c.redirect(
      `/console/api-keys?revoked=${encodeURIComponent(`“${revoked.body.name}” (…${revoked.body.suffix})`)}`,
      303,
    )
  })
}
