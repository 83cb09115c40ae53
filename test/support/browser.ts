/**
 * A real browser for the console's end-to-end tests: Debian's Chromium (no browser is downloaded;
 * `.ci/run` installs the package when /usr/bin/chromium is missing), driven headless with
 * playwright-core, a fresh profile per run. Screenshots go to test-artifacts/ (git-ignored).
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { type BrowserContext, chromium, type Page } from 'playwright-core'
import { ROOT } from '../../scripts/workers.ts'

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium'

export interface Browser {
  context: BrowserContext
  /** Saves a full-page screenshot as test-artifacts/console/<name>.png and returns its path. */
  shot(page: Page, name: string): Promise<string>
  close(): Promise<void>
}

export async function launchBrowser(artifacts: string): Promise<Browser> {
  const profile = mkdtempSync(path.join(os.tmpdir(), 'svc-chromium-'))
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    viewport: { width: 1280, height: 900 },
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  })
  const folder = path.join(ROOT, 'test-artifacts', artifacts)
  mkdirSync(folder, { recursive: true })
  return {
    context,
    async shot(page, name) {
      const file = path.join(folder, `${name}.png`)
      await page.screenshot({ path: file, fullPage: true })
      return file
    },
    async close() {
      await context.close()
      rmSync(profile, { recursive: true, force: true })
    },
  }
}
