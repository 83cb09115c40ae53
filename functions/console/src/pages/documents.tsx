/**
 * Documents: the workspace's documents (list, upload as source and text, look at one with its
 * chunks, delete) and a retrieval to try. A client of /svc/documents*; when the plan lacks the
 * feature the page shows the API's refusal.
 */
import type { Hono } from 'hono'
import type { DocumentDetail, DocumentList, DocumentUploadResult, RetrievalResult } from '../api-types'
import { ApiRefusal, DataTable, Field, type Flash, FlashNotice, PostAction } from '../components'
import type { ConsoleApp, ConsoleContext } from '../console.context'
import { CsrfField, Frame, formatDate, formatNumber } from '../layout'
import { formString, frameOf, html } from '../page'

async function render(c: ConsoleContext, flash?: Flash, status = 200) {
  const api = c.get('api')
  const after = c.req.query('after')
  const query = (c.req.query('q') ?? '').trim()
  const [list, retrieval] = await Promise.all([
    api.get<DocumentList>(`/svc/documents?limit=20${after ? `&after=${encodeURIComponent(after)}` : ''}`),
    query
      ? api.send<RetrievalResult>('POST', '/svc/documents/retrieve', { query, k: 5 })
      : Promise.resolve(null),
  ])
  const frame = await frameOf(c, 'Documents', 'documents')
  return html(
    c,
    <Frame frame={frame}>
      <h1>Documents</h1>
      <p class="lead">The workspace's documents, chunked and indexed for retrieval.</p>
      <FlashNotice flash={flash} />
      <ApiRefusal result={list} what="Documents" />
      {list.ok ? (
        <DataTable
          label="Documents"
          columns={[
            'Source',
            { label: 'Size', num: true },
            { label: 'Chunks', num: true },
            'Index',
            'Updated',
            'Actions',
          ]}
          rows={list.body.data}
          empty="No documents yet."
          row={(d) => (
            <tr data-document-id={d.id}>
              <td>
                <a href={`/console/documents/${d.id}`}>{d.source}</a>
              </td>
              <td class="num">{formatNumber(d.size_bytes)} B</td>
              <td class="num">{d.chunk_count}</td>
              <td>{d.indexing_state}</td>
              <td class="nowrap">{formatDate(d.updated_at)}</td>
              <td>
                <PostAction
                  action={`/console/documents/${d.id}/delete`}
                  csrf={frame.csrf}
                  label="Delete"
                  name={`Delete ${d.source}`}
                  kind="danger"
                  confirm={`Delete “${d.source}” and its chunks?`}
                />
              </td>
            </tr>
          )}
        />
      ) : null}
      {list.ok && list.body.has_more && list.body.next_cursor ? (
        <p>
          <a href={`/console/documents?after=${encodeURIComponent(list.body.next_cursor)}`}>More documents</a>
        </p>
      ) : null}

      <h2 id="retrieve-h">Try a retrieval</h2>
      <form method="get" action="/console/documents" class="filters" aria-labelledby="retrieve-h">
        <Field id="q" label="Query">
          <input id="q" name="q" type="text" value={query} required />
        </Field>
        <button type="submit" class="secondary">
          Retrieve
        </button>
      </form>
      {retrieval ? (
        retrieval.ok ? (
          <ol class="panel" aria-label="Retrieved chunks">
            {retrieval.body.data.map((r) => (
              <li>
                <strong>{r.source}</strong>{' '}
                <span class="muted">
                  (chunk {r.index}, score {r.score.toFixed(4)})
                </span>
                <p>{r.text.length > 400 ? `${r.text.slice(0, 400)}…` : r.text}</p>
              </li>
            ))}
            {retrieval.body.data.length === 0 ? <li class="muted">Nothing matched.</li> : null}
          </ol>
        ) : (
          <ApiRefusal result={retrieval} what="Retrieval" />
        )
      ) : null}

      <h2 id="upload-h">Upload a document</h2>
      <form method="post" action="/console/documents" class="panel" aria-labelledby="upload-h">
        <CsrfField csrf={frame.csrf} />
        <Field
          id="doc-source"
          label="Source"
          hint="A path, URL or title; the same source again replaces the document"
        >
          <input id="doc-source" name="source" type="text" required maxlength={1024} />
        </Field>
        <Field id="doc-content" label="Text">
          <textarea id="doc-content" name="content" required />
        </Field>
        <button type="submit">Upload</button>
      </form>
    </Frame>,
    status,
  )
}

export function documentPages(app: Hono<ConsoleApp>): void {
  app.get('/documents', (c) => {
    const done = c.req.query('deleted')
    return render(c, done ? { kind: 'ok', text: 'Document deleted.' } : undefined)
  })

  app.post('/documents', async (c) => {
    const uploaded = await c.get('api').send<DocumentUploadResult>('POST', '/svc/documents/upload', {
      source: formString(c, 'source'),
      content: formString(c, 'content'),
    })
    if (!uploaded.ok) return render(c, { kind: 'error', text: uploaded.error.message }, uploaded.status)
    return render(
      c,
      {
        kind: 'ok',
        text: `“${uploaded.body.source}” ${uploaded.body.status}: ${uploaded.body.chunk_count} chunks.`,
      },
      201,
    )
  })

  app.get('/documents/:id', async (c) => {
    const id = c.req.param('id')
    const found = await c.get('api').get<DocumentDetail>(`/svc/documents/${encodeURIComponent(id)}`)
    const frame = await frameOf(c, 'Document', 'documents')
    return html(
      c,
      <Frame frame={frame}>
        <h1>{found.ok ? found.body.source : 'Document'}</h1>
        <ApiRefusal result={found} what="This document" />
        {found.ok ? (
          <>
            <p class="lead">
              {formatNumber(found.body.size_bytes)} bytes · {found.body.chunk_count} chunks ·{' '}
              {found.body.indexing_state}
            </p>
            <ol>
              {found.body.chunks.map((chunk) => (
                <li>
                  <p>{chunk.text}</p>
                </li>
              ))}
            </ol>
          </>
        ) : null}
        <p>
          <a href="/console/documents">All documents</a>
        </p>
      </Frame>,
      found.ok ? 200 : found.status,
    )
  })

  app.post('/documents/:id/delete', async (c) => {
    const deleted = await c
      .get('api')
      .send('DELETE', `/svc/documents/${encodeURIComponent(c.req.param('id'))}`)
    if (!deleted.ok) return render(c, { kind: 'error', text: deleted.error.message }, deleted.status)
    return c.redirect('/console/documents?deleted=1', 303)
  })
}
