/**
 * Audit log: the latest signed checkpoint and the workspace's entries, newest first, 25 a page, each
 * a sentence that opens its fields; each entry's inclusion proof can be verified in the browser
 * (WebCrypto: the checkpoint's Ed25519 signature with the published log keys, the leaf hash, the
 * Merkle path to the signed root).
 */
import type { Hono } from 'hono'
import type { AuditEvent } from '../../../../shared/audit/audit-events'
import type { ApiKeyList, Checkpoint, EntryList } from '../api-types'
import { DataTable, Pager } from '../components'
import type { ConsoleApp } from '../console.context'
import { Frame, formatDate, Notice } from '../layout'
import { frameOf, html } from '../page'

/** Entries per page: compact rows, a screen or two, then "Older entries". */
const PAGE = 25

/** Turns an actor or a token's subject (`key:<id>`, `user:<id>`, `sa:<id>`) into a name the reader knows. */
type Who = (actor: string) => string

const words = (text: string) => text.replaceAll('_', ' ')

/**
 * One sentence about an event, in the words of its kind (shared/audit/audit-events.ts lists them),
 * naming actors and subjects as the reader knows them. Its fields are shown on demand beside it.
 */
export function describeEvent(event: AuditEvent, who: Who = (actor) => actor): string {
  switch (event.kind) {
    case 'api_key.changed':
      return `API key ${event.name ?? `…${event.suffix ?? ''}`} ${event.action} by ${who(event.actor)}`
    case 'service_account.changed':
      return `Service account ${event.name ?? event.service_account_id} ${event.action} by ${who(event.actor)}`
    case 'observability_token.changed':
      return `Observability token ${event.name ?? event.token_id} ${event.action} by ${who(event.actor)}`
    case 'crypto_policy.changed':
      return `Policy set to ${event.preset ?? 'custom'} (${event.mode}) by ${who(event.actor)}`
    case 'crypto_policy.decision':
      return `${event.outcome}: ${event.algorithm} (${event.context}) on ${event.method} ${event.path}`
    case 'token.issued':
      return `Token for ${who(event.subject)} (${event.audience}, ${event.alg}, ${event.grant})`
    case 'refresh_token.family_revoked':
      return `Sign-in of ${who(event.subject)} revoked: ${words(event.reason)}`
    case 'signing_keys.changed':
      return `${event.purpose === 'access_tokens' ? 'Token' : 'Audit log'} signing keys changed: ${event.keys.map((k) => `${k.alg} ${k.kid}`).join(', ')}`
    case 'agent_run.cancelled':
      return `Agent run ${event.run_id} cancelled by ${who(event.actor)}`
    case 'billing.changed':
      return `Billing changed by ${who(event.actor)}${event.plan_id ? `: plan ${event.previous_plan_id ?? ''} → ${event.plan_id}` : ''}`
    case 'provider_connection.changed':
      return `QPU provider connection (${event.provider}) ${event.action} by ${who(event.actor)}`
    case 'inference_receipt.issued':
      return `Inference receipt ${event.receipt_id} signed (${event.alg})`
    case 'usage_statement.issued':
      return `Usage statement of ${who(`key:${event.key_id}`)} (${event.period.split(':')[0]}, ${event.requests} ${event.requests === 1 ? 'request' : 'requests'}) signed (${event.alg}) for ${who(event.actor)}`
    case 'attestation.issued':
      return `Attestation issued to ${who(event.actor)}: ${event.subjects.length} ${event.subjects.length === 1 ? 'subject' : 'subjects'}, signed with ${event.signatures.map((x) => x.alg).join(' and ')}`
    default:
      // An entry of a kind this console does not know yet: its kind, and its fields on demand.
      return `Event ${(event as { kind: string }).kind}`
  }
}

/** A field's value as the detail shows it: people and keys by name, lists and objects as compact JSON. */
function fieldText(name: string, value: unknown, who: Who): string {
  if (typeof value === 'string') {
    if (name === 'started_by' && value.startsWith('sub:')) return who(value.slice(4))
    return /^(key|user|sa):/.test(value) ? who(value) : value
  }
  return typeof value === 'object' && value !== null ? JSON.stringify(value) : String(value)
}

/** One entry: the sentence, which opens the event's fields and where the log put it. */
function EntryRow({
  index,
  appended,
  event,
  who,
}: {
  index: number
  appended?: string
  event: AuditEvent
  who: Who
}) {
  const { kind, ...fields } = event
  return (
    <tr data-entry-index={String(index)}>
      <td class="num">{index}</td>
      <td>{formatDate(appended)}</td>
      <td>
        <details>
          <summary>{describeEvent(event, who)}</summary>
          <dl class="facts">
            <dt>Event</dt>
            <dd>
              <code>{kind}</code>
            </dd>
            {Object.entries(fields).map(([name, value]) => (
              <>
                <dt>{words(name)}</dt>
                <dd>{fieldText(name, value, who)}</dd>
              </>
            ))}
          </dl>
        </details>
      </td>
      <td>
        <button
          type="button"
          class="secondary small"
          data-verify-index={String(index)}
          data-output={`proof-${index}`}
          aria-label={`Verify the inclusion proof of entry ${index}`}
        >
          Verify proof
        </button>
        <output id={`proof-${index}`} class="verify-result" aria-live="polite" />
      </td>
    </tr>
  )
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
          fixed={true}
          columns={[
            { label: 'Index', num: true, rem: 5 },
            { label: 'Appended', rem: 12 },
            'What happened',
            { label: 'Proof', rem: 9 },
          ]}
          rows={rows}
          empty="No entries."
          row={(e) => (
            <EntryRow
              index={e.index}
              appended={(JSON.parse(e.entry) as { appended_at?: string }).appended_at}
              event={e.event as AuditEvent}
              who={who}
            />
          )}
        />
        <Pager
          what="entries"
          newest={before < size ? '/console/audit-log' : null}
          older={start > 0 ? `/console/audit-log?before=${start}` : null}
        />
      </Frame>,
    )
  })
}
