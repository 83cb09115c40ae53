/**
 * The login and consent page of the authorization server: who is asking, for what, on which
 * resource; the person signs in with the product's email and password and allows or denies.
 * Plain HTML with no script, every value escaped, never framed (clickjacking), never cached.
 */
import type { AuthorizationRequest } from './authorization-request'

const SCOPE_TEXT: Record<string, string> = {
  'mcp:tools':
    'use the tools of your workspace (web search, memories, models, reasoning jobs, crypto policy) as you',
  'mcp:resources': 'read your documents and memories as MCP resources',
}

export function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`)
}

const STYLE = `body{font:16px/1.5 system-ui,sans-serif;max-width:30rem;margin:3rem auto;padding:0 1rem;color:#111}
h1{font-size:1.4rem}label{display:block;margin:.8rem 0 .2rem}input,select{width:100%;padding:.5rem;font:inherit;box-sizing:border-box}
.actions{display:flex;gap:1rem;margin-top:1.2rem}button{flex:1;padding:.6rem;font:inherit;cursor:pointer}
.error{background:#fde8e8;border:1px solid #e0a0a0;padding:.6rem;border-radius:4px}code{font-size:.9em}`

export const PAGE_HEADERS = {
  'content-type': 'text/html; charset=utf-8',
  'cache-control': 'no-store',
  'x-frame-options': 'DENY',
  'content-security-policy':
    "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'",
  'referrer-policy': 'no-referrer',
} as const

function page(title: string, body: string): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1"><title>${escapeHtml(title)}</title><style>${STYLE}</style></head><body>${body}</body></html>`
}

export function errorPage(message: string): string {
  return page(
    'Authorization failed',
    `<h1>This authorization request cannot be completed</h1><p class="error">${escapeHtml(message)}</p><p>Go back to the application and try again.</p>`,
  )
}

export interface ConsentPageOptions {
  /** The authorization parameters, posted back unchanged. */
  params: Record<string, string | undefined>
  error?: string
  email?: string
  /** Shown as a choice when the person belongs to several workspaces. */
  workspaces?: { id: string; name: string }[]
}

export function consentPage(request: AuthorizationRequest, options: ConsentPageOptions): string {
  const name = request.client.clientName ?? request.client.id
  const hidden = Object.entries(options.params)
    .filter(([, v]) => v !== undefined)
    .map(([k, v]) => `<input type="hidden" name="${escapeHtml(k)}" value="${escapeHtml(v!)}">`)
    .join('')
  const scopes = request.scope
    .split(' ')
    .map((s) => `<li>${escapeHtml(SCOPE_TEXT[s] ?? s)} (<code>${escapeHtml(s)}</code>)</li>`)
    .join('')
  const workspace = options.workspaces?.length
    ? `<label for="tenant_id">Workspace</label><select id="tenant_id" name="tenant_id">${options.workspaces
        .map((w) => `<option value="${escapeHtml(w.id)}">${escapeHtml(w.name)}</option>`)
        .join('')}</select>`
    : ''
  return page(
    `Allow ${name}?`,
    `<h1>${escapeHtml(name)} wants to act as you on svc</h1>
<p>It will be able to:</p><ul>${scopes}</ul>
<p>Access is limited to <code>${escapeHtml(request.resource)}</code> and sent back to <code>${escapeHtml(request.redirectUri)}</code>.</p>
${options.error ? `<p class="error" role="alert">${escapeHtml(options.error)}</p>` : ''}
<form method="post" action="/oauth/authorize">${hidden}
<label for="email">Email</label><input id="email" name="email" type="email" autocomplete="username" required value="${escapeHtml(options.email ?? '')}">
<label for="password">Password</label><input id="password" name="password" type="password" autocomplete="current-password" required>
${workspace}
<div class="actions"><button type="submit" name="decision" value="allow">Allow</button><button type="submit" name="decision" value="deny" formnovalidate>Deny</button></div>
</form>`,
  )
}
