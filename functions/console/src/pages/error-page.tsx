/** A console error as a page: what went wrong, the request id to quote, and a way back. */
import type { AppError } from '../../../../shared/http/errors'
import { assetUrls } from '../assets'
import type { ConsoleContext } from '../console.context'
import { Document, Notice } from '../layout'

export async function errorPage(c: ConsoleContext, error: AppError) {
  const assets = await assetUrls()
  const page = (
    <Document title="Something went wrong" assets={assets}>
      <main id="main" class="sign-in">
        <h1>Something went wrong</h1>
        <Notice kind="error" title={`${error.status} ${error.code}`}>
          <p>
            {error.status >= 500
              ? 'The console could not finish this request. Retry in a moment.'
              : error.message}
          </p>
          <p class="muted">
            Request id: <code>{c.get('requestId')}</code>
          </p>
        </Notice>
        <p>
          <a href="/console/overview">Back to the console</a>
        </p>
      </main>
    </Document>
  )
  return c.html(`<!doctype html>${String(page)}`, error.status as 400)
}
