/**
 * The pieces the console's pages share inside the frame: a list table (column headers, rows, the
 * "nothing yet" row, inside a scrollable focusable region), a one-button change form (CSRF token,
 * optional confirmation, the button's accessible name), a labelled form field with the server's
 * message beside it, the secret shown once with its copy button, and the notice for an API
 * refusal (with the upgrade link of an action-required body).
 */
import { raw } from 'hono/html'
import type { Child, FC, PropsWithChildren } from 'hono/jsx'
import type { ApiResult } from './console-api'
import { CsrfField, Notice, TableRegion } from './layout'

export interface Column {
  label: string
  /** Right-aligned tabular figures. */
  num?: boolean
  /** Width in rem of a column of a `fixed` table (the others share what is left). */
  rem?: 4 | 5 | 6 | 7 | 8 | 9 | 10 | 11 | 12 | 14 | 16 | 18
}

const escapeAttribute = (text: string) =>
  text.replaceAll('&', '&amp;').replaceAll('"', '&quot;').replaceAll('<', '&lt;')

/**
 * A row with each cell labelled by its column (`data-label`): on a narrow screen the rows stack and
 * each cell shows its label before it (console.css.ts). Rows are plain server-rendered HTML, and no
 * cell holds a nested table, so every `<td` of the row's HTML is one of its cells, in order.
 */
function labelled(row: Child, labels: readonly string[]) {
  let cell = 0
  const text = String(row).replace(/<tr(?=[\s>])|<td(?=[\s>])/g, (tag) => {
    if (tag === '<tr') {
      cell = 0
      return tag
    }
    const label = labels[cell++]
    return label ? `<td data-label="${escapeAttribute(label)}"` : tag
  })
  return raw(text)
}

/**
 * A table of `rows` with one header per column and `empty` in a full-width row when none. At 761 px
 * and wider each cell holds one line (longer text ends in an ellipsis; its whole text stays in the
 * page, for copying and for `title`), so rows stay compact; a `fixed` table gives its columns the
 * widths they name and shares the rest. Narrower, the rows stack, each cell under its label.
 */
export function DataTable<T>(props: {
  label: string
  columns: readonly (string | Column | null)[]
  rows: readonly T[]
  row: (item: T) => Child
  empty: string
  caption?: Child
  fixed?: boolean
}) {
  const columns = props.columns
    .filter((c): c is string | Column => c !== null)
    .map((c) => (typeof c === 'string' ? { label: c } : c))
  const labels = columns.map((c) => c.label)
  return (
    <TableRegion label={props.label}>
      <table class={props.fixed ? 'fixed' : undefined}>
        {props.caption ? <caption class="muted">{props.caption}</caption> : null}
        {props.fixed ? (
          <colgroup>
            {columns.map((c) => (
              <col class={c.rem ? `w-${c.rem}` : undefined} />
            ))}
          </colgroup>
        ) : null}
        <thead>
          <tr>
            {columns.map((c) => (
              <th scope="col" class={c.num ? 'num' : undefined}>
                {c.label}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {props.rows.map((item) => labelled(props.row(item), labels))}
          {props.rows.length === 0 ? (
            <tr>
              <td colspan={columns.length} class="muted">
                {props.empty}
              </td>
            </tr>
          ) : null}
        </tbody>
      </table>
    </TableRegion>
  )
}

/** Pages of a list: links to the newest page and the next older one (what the API's cursor allows). */
export const Pager: FC<{ newest: string | null; older: string | null; what: string }> = ({
  newest,
  older,
  what,
}) =>
  newest || older ? (
    <nav class="pager" aria-label={`Pages of ${what}`}>
      {newest ? <a href={newest}>Newest {what}</a> : null}
      {older ? <a href={older}>Older {what}</a> : null}
    </nav>
  ) : null

/**
 * A POST form that does one thing: the session's CSRF token, any extra fields (`children`, before
 * the button), and a button whose accessible name says what it acts on (`name`, when the visible
 * label alone is ambiguous in a table). `confirm` is asked by the console script before sending.
 */
export const PostAction: FC<
  PropsWithChildren<{
    action: string
    csrf: string
    label: string
    name?: string
    confirm?: string
    kind?: 'primary' | 'secondary' | 'danger'
    small?: boolean
  }>
> = ({ action, csrf, label, name, confirm, kind = 'secondary', small = true, children }) => (
  <form method="post" action={action} class="inline" data-confirm={confirm}>
    <CsrfField csrf={csrf} />
    {children}
    <button
      type="submit"
      class={[kind === 'primary' ? '' : kind, small ? 'small' : ''].filter(Boolean).join(' ') || undefined}
      aria-label={name}
    >
      {label}
    </button>
  </form>
)

/** Row actions side by side (wrapping on a narrow screen). */
export const Actions: FC<PropsWithChildren> = ({ children }) => <div class="actions">{children}</div>

/**
 * A labelled field. `error` is the server's message about this field: shown beside it as an
 * alert with id `<id>-error`, which the control names in `aria-describedby` (see `invalid`).
 */
export const Field: FC<
  PropsWithChildren<{ id: string; label: string; hint?: string; error?: string | null }>
> = ({ id, label, hint, error, children }) => (
  <div class="field">
    <label for={id}>
      {label}
      {hint ? <span class="hint">{hint}</span> : null}
    </label>
    {children}
    {error ? (
      <span class="hint error-text" id={`${id}-error`} role="alert">
        {error}
      </span>
    ) : null}
  </div>
)

/** The attributes a control gets when its field has an error. */
export function invalid(id: string, error: string | null | undefined) {
  return error ? { 'aria-invalid': 'true' as const, 'aria-describedby': `${id}-error` } : {}
}

/** A new secret, shown in the answer to the form that made it and nowhere else, with a copy button. */
export const SecretOnce: FC<PropsWithChildren<{ title: string; secret: string }>> = ({
  title,
  secret,
  children,
}) => (
  <Notice kind="ok" title={title}>
    {children}
    <div class="secret">
      <code id="new-secret">{secret}</code>
      {/* Shown by the console script, which does the copying. */}
      <button type="button" class="secondary small" data-copy="new-secret" data-status="copy-status" hidden>
        Copy
      </button>
      <span id="copy-status" role="status" aria-live="polite" />
    </div>
  </Notice>
)

/** The API's refusal as a notice; an action-required body links to the console page it names. */
export const ApiRefusal: FC<{ result: ApiResult<unknown>; what: string }> = ({ result, what }) => {
  if (result.ok) return null
  const upgrade = (
    result.body as { svc_upgrade?: { actions?: { url: string | null; label: string }[] } } | null
  )?.svc_upgrade?.actions?.find((a) => a.url)
  const link = upgrade?.url ? new URL(upgrade.url) : null
  return (
    <Notice
      kind={result.status >= 500 && result.status !== 501 ? 'error' : 'warn'}
      title={`${what} unavailable`}
    >
      <p>
        {result.error.message} <span class="muted">({result.error.code})</span>
      </p>
      {link && upgrade ? (
        <p>
          <a href={link.pathname + link.search}>{upgrade.label}</a>
        </p>
      ) : null}
    </Notice>
  )
}

/** What a form's answer says happened: shown at the top of the page it renders. */
export type Flash = { kind: 'ok' | 'error'; text: string } | undefined

export const FlashNotice: FC<{ flash: Flash }> = ({ flash }) =>
  flash ? <Notice kind={flash.kind}>{flash.text}</Notice> : null
