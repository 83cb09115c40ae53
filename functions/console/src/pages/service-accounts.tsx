/**
 * Service accounts (owners and admins): list, create (the secret shown once), rotate the secret
 * (the old one stops at once), revoke. A client of /platform/v1/service-accounts.
 */
import type { Hono } from 'hono'
import type { ServiceAccount, ServiceAccountList, ServiceAccountWithSecret } from '../api-types'
import {
  Actions,
  ApiRefusal,
  DataTable,
  Field,
  type Flash,
  FlashNotice,
  PostAction,
  SecretOnce,
} from '../components'
import type { ConsoleApp, ConsoleContext } from '../console.context'
import { CsrfField, Frame, formatDate } from '../layout'
import { formList, formString, frameOf, html, isAdmin } from '../page'

interface AccountState {
  secret?: { id: string; name: string; secret: string }
  notice?: Flash
}

async function renderAccounts(c: ConsoleContext, state: AccountState = {}, status = 200) {
  const frame = await frameOf(c, 'Service accounts', 'service-accounts')
  const admin = isAdmin(c)
  const listed = admin ? await c.get('api').get<ServiceAccountList>('/platform/v1/service-accounts') : null
  return html(
    c,
    <Frame frame={frame}>
      <h1>Service accounts</h1>
      <p class="lead">
        Non-human principals: exchange the id and secret at <code>POST /auth/service-token</code> for an
        access token (audience <code>internal-service</code> or <code>external-api</code>).
      </p>
      {state.secret ? (
        <SecretOnce title="Copy the secret now" secret={state.secret.secret}>
          <p>
            Client id <code>{state.secret.id}</code> (“{state.secret.name}”). The secret is shown only this
            once:
          </p>
        </SecretOnce>
      ) : null}
      <FlashNotice flash={state.notice} />
      {!admin ? <p class="muted">Only workspace owners and admins see and manage service accounts.</p> : null}
      {listed ? <ApiRefusal result={listed} what="Service accounts" /> : null}
      {listed?.ok ? (
        <DataTable
          label="Service accounts"
          columns={['Name', 'Client id', 'Audiences', 'Created', 'Status', 'Actions']}
          rows={listed.body.data}
          empty="No service accounts yet."
          row={(a) => (
            <tr>
              <td>{a.name}</td>
              <td>
                <code>{a.id}</code>
              </td>
              <td>{a.audiences.join(', ')}</td>
              <td>{formatDate(a.created_at)}</td>
              <td>
                <span class={`badge ${a.revoked_at ? 'revoked' : 'active'}`}>
                  {a.revoked_at ? 'revoked' : 'active'}
                </span>
                {a.rotated_at ? <span class="hint">rotated {formatDate(a.rotated_at)}</span> : null}
              </td>
              <td>
                {a.revoked_at ? (
                  '—'
                ) : (
                  <Actions>
                    <PostAction
                      action={`/console/service-accounts/${a.id}/rotate`}
                      csrf={frame.csrf}
                      label="Rotate secret"
                      name={`Rotate the secret of ${a.name}`}
                      confirm={`Rotate the secret of “${a.name}”? The current secret stops working at once.`}
                    />
                    <PostAction
                      action={`/console/service-accounts/${a.id}/revoke`}
                      csrf={frame.csrf}
                      label="Revoke"
                      name={`Revoke ${a.name}`}
                      kind="danger"
                      confirm={`Revoke “${a.name}”? Its secret and tokens stop working.`}
                    />
                  </Actions>
                )}
              </td>
            </tr>
          )}
        />
      ) : null}
      {admin ? (
        <section aria-labelledby="sa-create-h">
          <h2 id="sa-create-h">Create a service account</h2>
          <form method="post" action="/console/service-accounts" class="panel">
            <CsrfField csrf={frame.csrf} />
            <div class="form-grid">
              <Field id="sa-name" label="Name">
                <input id="sa-name" name="name" type="text" required maxlength={120} />
              </Field>
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

export function serviceAccountPages(app: Hono<ConsoleApp>): void {
  app.get('/service-accounts', (c) => {
    const done = c.req.query('revoked')
    return renderAccounts(c, done ? { notice: { kind: 'ok', text: `Service account ${done} revoked.` } } : {})
  })

  app.post('/service-accounts', async (c) => {
    const audiences = formList(c, 'audiences')
    const made = await c.get('api').send<ServiceAccountWithSecret>('POST', '/platform/v1/service-accounts', {
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
      .send<ServiceAccountWithSecret>(
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
      .send<ServiceAccount>(
        'DELETE',
        `/platform/v1/service-accounts/${encodeURIComponent(c.req.param('id'))}`,
      )
    if (!revoked.ok)
      return renderAccounts(c, { notice: { kind: 'error', text: revoked.error.message } }, revoked.status)
    return c.redirect(
      `/console/service-accounts?revoked=${encodeURIComponent(`“${revoked.body.name}”`)}`,
      303,
    )
  })
}
