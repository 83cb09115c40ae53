/**
 * Audit log: the latest signed checkpoint and the workspace's entries, newest first, 50 a page;
 * each entry's inclusion proof can be verified in the browser (WebCrypto: the checkpoint's Ed25519
 * signature with the published log keys, the leaf hash, the Merkle path to the signed root).
 */
import type { Hono } from 'hono'
import type { ApiKeyList, Checkpoint, EntryList } from '../api-types'
import { DataTable } from '../components'
import type { ConsoleApp } from '../console.context'
import { Frame, formatDate, Notice } from '../layout'
import { frameOf, html } from '../page'

const PAGE = 50

/**
 * One line about an event, in the words of its kind. `who` turns an actor or a token's subject
 * (`key:<id>`, `user:<id>`) into a name the reader knows, when the page knows it.
 */
export function describeEvent(
  event: Record<string, unknown>,
  who: (actor: string) => string = (actor) => actor,
): string {
  const s = (k: string) =>
    event[k] === undefined || event[k] === null
      ? ''
      : k === 'actor' || k === 'subject'
        ? who(String(event[k]))
        : String(event[k])
  switch (event.kind) {
    case 'api_key.changed':
      return `API key ${s('name') || `…${s('suffix')}`} ${s('action')} by ${s('actor')}`
    case 'service_account.changed':
      return `Service account ${s('name') || s('service_account_id')} ${s('action')} by ${s('actor')}`
    case 'observability_token.changed':
      return `Observability token ${s('name') || s('token_id')} ${s('action')} by ${s('actor')}`
    case 'crypto_policy.changed':
      return `Policy set to ${s('preset') || 'custom'} (${s('mode')}) by ${s('actor')}`
    case 'crypto_policy.decision':
      return `${s('outcome')}: ${s('algorithm')} (${s('context')}) on ${s('method')} ${s('path')}`
    case 'token.issued':
      return `Token for ${s('subject')} (${s('audience')}, ${s('alg')}, ${s('grant')})`
    case 'agent_run.cancelled':
      return `Agent run ${s('run_id')} cancelled by ${s('actor')}`
    case 'billing.changed':
      return `Billing changed by ${s('actor')}${s('plan_id') ? `: plan ${s('previous_plan_id')} → ${s('plan_id')}` : ''}`
    default:
      return Object.entries(event)
        .filter(([k]) => k !== 'kind')
        .slice(0, 3)
        .map(([k, v]) => `${k}: ${typeof v === 'object' ? JSON.stringify(v) : String(v)}`)
        .join(', ')
  }
}

export function auditLogPages(app: Hono<ConsoleApp>): void {
  app.get('/audit-log', async (c) => {
    const api = c.get('api')
    const checkpoint = await api.get<Checkpoint>('/platform/v1/audit-log/checkpoint')
    const head = await api.get<EntryList>('/platform/v1/audit-log/entries?start=0&end=1')
    const size = head.ok ? head.body.tree_size : 0
    const before = Math.min(size, Math.max(0, Number(c.req.query('before') ?? size) || size))
    const start = Math.max(0, before - PAGE)
    const entries =
      before > 0
        ? await api.get<EntryList>(`/platform/v1/audit-log/entries?start=${start}&end=${before}`)
        : null
    const rows = entries?.ok ? [...entries.body.data].reverse() : []
    // Actors by name: what the log API resolved in this workspace (keys, members, service
    // accounts), the keys with their redacted values, and the signed-in person as "you".
    const keys = await api.get<ApiKeyList>('/platform/v1/api-keys?include_inactive=true')
    const me = c.get('workspace').user
    const resolved = Object.entries(entries?.ok ? entries.body.names : {}).map(
      ([actor, name]): [string, string] =>
        actor.startsWith('key:')
          ? [actor, `key “${name}”`]
          : actor.startsWith('sa:')
            ? [actor, `service account “${name}”`]
            : [actor, name],
    )
    const names = new Map<string, string>([
      ...resolved,
      ...(keys.ok ? keys.body.data : []).map((k): [string, string] => [
        `key:${k.id}`,
        `key “${k.name}” (${k.redacted_value})`,
      ]),
      ...(me ? [[`user:${me.id}`, `you (${me.email})`] as [string, string]] : []),
    ])
    const who = (actor: string) => names.get(actor) ?? actor
    const frame = await frameOf(c, 'Audit log', 'audit-log')
    return html(
      c,
      <Frame frame={frame}>
        <h1>Audit log</h1>
        <p class="lead">
          Every key, account, policy and token event of this workspace, in an append-only Merkle log with
          signed checkpoints (RFC 9162, C2SP).
        </p>
        {checkpoint.ok ? (
          <section class="panel" aria-labelledby="cp-h">
            <h2 id="cp-h">Latest checkpoint</h2>
            <dl class="facts">
              <dt>Log</dt>
              <dd>
                <code>{checkpoint.body.origin}</code>
              </dd>
              <dt>Size</dt>
              <dd>
                {checkpoint.body.tree_size} entries
                {size > checkpoint.body.tree_size ? (
                  <span class="hint">
                    {size - checkpoint.body.tree_size} newer{' '}
                    {size - checkpoint.body.tree_size === 1 ? 'entry is' : 'entries are'} covered by the next
                    checkpoint, signed within minutes, or at once when a proof asks for it
                  </span>
                ) : null}
              </dd>
              <dt>Root hash</dt>
              <dd>
                <code>{checkpoint.body.root_hash}</code>
              </dd>
              <dt>Signed</dt>
              <dd>{formatDate(new Date(checkpoint.body.timestamp * 1000).toISOString())}</dd>
            </dl>
            <details>
              <summary>The signed note</summary>
              <pre>{checkpoint.body.note}</pre>
            </details>
          </section>
        ) : (
          <Notice kind="warn">No checkpoint yet: {checkpoint.error.message}</Notice>
        )}
        <h2 id="entries-h">
          Entries {start}–{Math.max(start, before - 1)} of {size}
        </h2>
        <DataTable
          label="Audit log entries"
          columns={['Index', 'Appended', 'Kind', 'What', 'Proof']}
          rows={rows}
          empty="No entries."
          row={(e) => {
            const appended = (JSON.parse(e.entry) as { appended_at?: string }).appended_at
            return (
              <tr data-entry-index={String(e.index)}>
                <td>{e.index}</td>
                <td class="nowrap">{formatDate(appended)}</td>
                <td>
                  <code>{String(e.event.kind)}</code>
                </td>
                <td>{describeEvent(e.event, who)}</td>
                <td>
                  <button
                    type="button"
                    class="secondary small"
                    data-verify-index={String(e.index)}
                    data-output={`proof-${e.index}`}
                    aria-label={`Verify the inclusion proof of entry ${e.index}`}
                  >
                    Verify proof
                  </button>
                  <output id={`proof-${e.index}`} class="verify-result" aria-live="polite" />
                </td>
              </tr>
            )
          }}
        />
        {start > 0 ? (
          <p>
            <a href={`/console/audit-log?before=${start}`}>Older entries</a>
          </p>
        ) : null}
      </Frame>,
    )
  })
}
