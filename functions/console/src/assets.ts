/**
 * The console's static assets, served by the gateway itself under /console/assets/ with a content
 * hash in the name (cached for a year, immutable): one stylesheet and one script. Nothing inline,
 * so the Content-Security-Policy allows only 'self' for scripts and styles.
 */
import script from './client/console.client?script'
import { CONSOLE_CSS } from './console.css'

interface Asset {
  name: string
  type: string
  body: string
}

let built: Promise<Map<string, Asset>> | null = null

async function hashed(base: string, ext: string, type: string, body: string): Promise<Asset> {
  const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(body)))
  const tag = [...digest.slice(0, 6)].map((b) => b.toString(16).padStart(2, '0')).join('')
  return { name: `${base}.${tag}.${ext}`, type, body }
}

function assets(): Promise<Map<string, Asset>> {
  built ??= Promise.all([
    hashed('console', 'css', 'text/css; charset=utf-8', CONSOLE_CSS),
    hashed('console', 'js', 'text/javascript; charset=utf-8', script),
  ]).then((list) => new Map(list.map((a) => [a.name, a])))
  return built
}

/** The URLs pages link to. */
export async function assetUrls(): Promise<{ css: string; js: string }> {
  const names = [...(await assets()).keys()]
  return {
    css: `/console/assets/${names.find((n) => n.endsWith('.css'))}`,
    js: `/console/assets/${names.find((n) => n.endsWith('.js'))}`,
  }
}

export async function asset(name: string): Promise<Asset | undefined> {
  return (await assets()).get(name)
}
