/** What every console page handler uses: its frame, its form fields, the viewer's role, HTML out. */
import { assetUrls } from './assets'
import type { ConsoleContext } from './console.context'
import type { PageFrame } from './layout'

/** What every page needs for its frame. */
export async function frameOf(c: ConsoleContext, title: string, section: string): Promise<PageFrame> {
  return {
    title,
    section,
    csrf: c.get('csrf'),
    mode: c.get('mode'),
    workspace: c.get('workspace'),
    assets: await assetUrls(),
    path: c.req.path,
  }
}

export function isAdmin(c: ConsoleContext): boolean {
  const role = c.get('workspace').role
  return role === 'owner' || role === 'admin'
}

export function formString(c: ConsoleContext, name: string): string {
  const value = c.get('form')[name]
  return typeof value === 'string' ? value : (value?.[0] ?? '')
}

export function formList(c: ConsoleContext, name: string): string[] {
  const value = c.get('form')[name]
  return value === undefined ? [] : Array.isArray(value) ? value : [value]
}

/** Renders a JSX page with the doctype. */
export function html(c: ConsoleContext, element: unknown, status = 200) {
  return c.html(`<!doctype html>${String(element)}`, status as 200)
}
