/**
 * The console's page frame: a skip link, the header (workspace, plan, role, the test/live switch,
 * sign-out), the navigation (current page marked with aria-current) and the main region. Every
 * form that changes something carries the session's CSRF token.
 */
import type { Child, FC, PropsWithChildren } from 'hono/jsx'
import type { Workspace } from './api-types'
import { NAV } from './navigation'

export type ConsoleMode = 'live' | 'test'

export interface PageFrame {
  title: string
  /** The nav entry to mark as current. */
  section: string
  csrf: string
  mode: ConsoleMode
  workspace: Workspace
  assets: { css: string; js: string }
  /** Where the mode switch returns to. */
  path: string
}

export const CsrfField: FC<{ csrf: string }> = ({ csrf }) => <input type="hidden" name="_csrf" value={csrf} />

export const Document: FC<PropsWithChildren<{ title: string; assets: { css: string; js: string } }>> = ({
  title,
  assets,
  children,
}) => (
  <html lang="en">
    <head>
      <meta charset="utf-8" />
      <meta name="viewport" content="width=device-width, initial-scale=1" />
      <meta name="referrer" content="same-origin" />
      <link rel="icon" href="data:," />
      <title>{title} · svc console</title>
      <link rel="stylesheet" href={assets.css} />
      <script src={assets.js} defer />
    </head>
    <body>{children}</body>
  </html>
)

export const Frame: FC<PropsWithChildren<{ frame: PageFrame }>> = ({ frame, children }) => {
  const { workspace } = frame
  return (
    <Document title={frame.title} assets={frame.assets}>
      <a class="skip" href="#main">
        Skip to content
      </a>
      <header class="top">
        <a class="brand" href="/console/overview">
          svc console
        </a>
        <span class="workspace">
          {workspace.name} · {workspace.plan.name} plan · {workspace.user?.email ?? workspace.principal} (
          {workspace.role})
        </span>
        <form method="post" action="/console/mode" class="mode-switch" aria-label="Data shown">
          <CsrfField csrf={frame.csrf} />
          <input type="hidden" name="return_to" value={frame.path} />
          <span class="mode-label">Mode:</span>
          <button
            type="submit"
            name="mode"
            value="test"
            aria-pressed={frame.mode === 'test' ? 'true' : 'false'}
          >
            Test
          </button>
          <button
            type="submit"
            name="mode"
            value="live"
            aria-pressed={frame.mode === 'live' ? 'true' : 'false'}
          >
            Live
          </button>
        </form>
        <form method="post" action="/console/sign-out">
          <CsrfField csrf={frame.csrf} />
          <button type="submit">Sign out</button>
        </form>
      </header>
      <div class="shell">
        <nav class="side" aria-label="Console sections">
          <ul>
            {NAV.map((item) => (
              <li>
                <a href={item.href} aria-current={item.section === frame.section ? 'page' : undefined}>
                  {item.label}
                </a>
              </li>
            ))}
          </ul>
        </nav>
        <main id="main" tabindex={-1}>
          {children}
        </main>
      </div>
    </Document>
  )
}

/** A message at the top of a page: what just happened, or what went wrong and what to do. */
export const Notice: FC<{ kind: 'ok' | 'error' | 'warn'; title?: string; children?: Child }> = ({
  kind,
  title,
  children,
}) => (
  <div class={`notice ${kind}`} role={kind === 'error' ? 'alert' : 'status'}>
    {title ? <h2>{title}</h2> : null}
    {children}
  </div>
)

/** A table inside a horizontally scrollable, keyboard-focusable region (narrow screens). */
export const TableRegion: FC<PropsWithChildren<{ label: string }>> = ({ label, children }) => (
  // A labelled section is a region landmark; focusable so a keyboard can scroll it.
  <section class="table-wrap" aria-label={label} tabindex={0}>
    {children}
  </section>
)

export function formatDate(iso: string | null | undefined): string {
  if (!iso) return '—'
  return `${iso.slice(0, 10)} ${iso.slice(11, 16)} UTC`
}

/** The day alone (YYYY-MM-DD), where the time of day matters less than a compact row. */
export function formatDay(iso: string | null | undefined): string {
  return iso ? iso.slice(0, 10) : '—'
}

export function formatNumber(n: number): string {
  return n.toLocaleString('en-US')
}

/** A latency as people read it: 412 ms, 3.25 s, 74.1 s; null (not measured) is "—". */
export function formatLatency(ms: number | null): string {
  if (ms === null) return '—'
  if (ms < 1000) return `${ms} ms`
  return `${(ms / 1000).toFixed(ms < 10_000 ? 2 : 1)} s`
}

export function formatCents(cents: number): string {
  return `$${(cents / 100).toLocaleString('en-US', { minimumFractionDigits: 2, maximumFractionDigits: 4 })}`
}
