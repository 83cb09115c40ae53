/**
 * The workspace's workloads, each page a client of its family's API:
 * - Documents: list, upload (source and text), look at one (its chunks), delete, try a retrieval.
 * - Reasoning: quantum-reasoning jobs (list with the capabilities, detail with candidates, selection
 *   evidence, result and receipt, cancel) and the QPU provider connections (connect, test, delete).
 * - Telemetry: the OTLP receiver's status and the newest ingestion results with totals per signal.
 * A page whose API is not available (the plan lacks the feature, or the release does not have it)
 * says so with the API's own message.
 */
import type { Hono } from 'hono'
import type {
  ReasoningJob,
  JobPage as ReasoningJobPage,
} from '../../../../../durable-objects/reasoning-job/job.schemas'
import { type ConsoleApp, type ConsoleContext, formString, frameOf, html, isAdmin } from '../console.app'
import type { ApiResult } from '../console-api'
import { CsrfField, Frame, formatDate, formatNumber, Notice, TableRegion } from '../layout'

type Flash = { kind: 'ok' | 'error'; text: string } | undefined

/** The API's refusal as a notice; an action-required body links to the console page it names. */
const Unavailable = ({ result, what }: { result: ApiResult<unknown>; what: string }) => {
  if (result.ok) return null
  const upgrade = (
    result.body as { svc_upgrade?: { actions?: { url: string | null; label: string }[] } } | null
  )?.svc_upgrade?.actions?.find((a) => a.url)
  return (
    <Notice
      kind={result.status >= 500 && result.status !== 501 ? 'error' : 'warn'}
      title={`${what} unavailable`}
    >
      <p>
        {result.error.message} <span class="muted">({result.error.code})</span>
      </p>
      {upgrade?.url ? (
        <p>
          <a href={new URL(upgrade.url).pathname + new URL(upgrade.url).search}>{upgrade.label}</a>
        </p>
      ) : null}
    </Notice>
  )
}

// --- Documents -------------------------------------------------------------------------------

interface Document {
  id: string
  source: string
  size_bytes: number
  chunk_count: number
  indexing_state: string
  updated_at: string
}

interface Retrieved {
  document_id: string
  source: string
  score: number
  text: string
  index: number
}

async function renderDocuments(c: ConsoleContext, flash?: Flash, status = 200) {
  const api = c.get('api')
  const after = c.req.query('after')
  const query = (c.req.query('q') ?? '').trim()
  const [list, retrieval] = await Promise.all([
    api.get<{ data: Document[]; has_more: boolean; next_cursor: string | null }>(
      `/svc/documents?limit=20${after ? `&after=${encodeURIComponent(after)}` : ''}`,
    ),
    query
      ? api.send<{ data: Retrieved[]; ranking: { vector: { state: string } } }>(
          'POST',
          '/svc/documents/retrieve',
          {
            query,
            k: 5,
          },
        )
      : Promise.resolve(null),
  ])
  const frame = await frameOf(c, 'Documents', 'documents')
  return html(
    c,
    <Frame frame={frame}>
      <h1>Documents</h1>
      <p class="lead">The workspace's documents, chunked and indexed for retrieval.</p>
      {flash ? <Notice kind={flash.kind}>{flash.text}</Notice> : null}
      <Unavailable result={list} what="Documents" />
      {list.ok ? (
        <TableRegion label="Documents">
          <table>
            <thead>
              <tr>
                <th scope="col">Source</th>
                <th scope="col" class="num">
                  Size
                </th>
                <th scope="col" class="num">
                  Chunks
                </th>
                <th scope="col">Index</th>
                <th scope="col">Updated</th>
                <th scope="col">Actions</th>
              </tr>
            </thead>
            <tbody>
              {list.body.data.map((d) => (
                <tr data-document-id={d.id}>
                  <td>
                    <a href={`/console/documents/${d.id}`}>{d.source}</a>
                  </td>
                  <td class="num">{formatNumber(d.size_bytes)} B</td>
                  <td class="num">{d.chunk_count}</td>
                  <td>{d.indexing_state}</td>
                  <td class="nowrap">{formatDate(d.updated_at)}</td>
                  <td>
                    <form
                      method="post"
                      action={`/console/documents/${d.id}/delete`}
                      data-confirm={`Delete “${d.source}” and its chunks?`}
                    >
                      <CsrfField csrf={frame.csrf} />
                      <button type="submit" class="danger small" aria-label={`Delete ${d.source}`}>
                        Delete
                      </button>
                    </form>
                  </td>
                </tr>
              ))}
              {list.body.data.length === 0 ? (
                <tr>
                  <td colspan={6} class="muted">
                    No documents yet.
                  </td>
                </tr>
              ) : null}
            </tbody>
          </table>
        </TableRegion>
      ) : null}
      {list.ok && list.body.has_more && list.body.next_cursor ? (
        <p>
          <a href={`/console/documents?after=${encodeURIComponent(list.body.next_cursor)}`}>More documents</a>
        </p>
      ) : null}

      <h2 id="retrieve-h">Try a retrieval</h2>
      <form method="get" action="/console/documents" class="filters" aria-labelledby="retrieve-h">
        <div class="field">
          <label for="q">Query</label>
          <input id="q" name="q" type="text" value={query} required />
        </div>
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
          <Unavailable result={retrieval} what="Retrieval" />
        )
      ) : null}

      <h2 id="upload-h">Upload a document</h2>
      <form method="post" action="/console/documents" class="panel" aria-labelledby="upload-h">
        <CsrfField csrf={frame.csrf} />
        <div class="field">
          <label for="doc-source">
            Source<span class="hint">A path, URL or title; the same source again replaces the document</span>
          </label>
          <input id="doc-source" name="source" type="text" required maxlength={1024} />
        </div>
        <div class="field">
          <label for="doc-content">Text</label>
          <textarea id="doc-content" name="content" required />
        </div>
        <button type="submit">Upload</button>
      </form>
    </Frame>,
    status,
  )
}

// --- Reasoning jobs and QPU connections --------------------------------------------------------

type Job = ReasoningJob
type JobPage = ReasoningJobPage

interface Connection {
  id: string
  name: string
  kind: string
  base_url: string
  target: string
  created_at: string
  last_test?: { ok: boolean; tested_at: string; error: { message: string } | null } | null
}

async function renderReasoning(c: ConsoleContext, flash?: Flash, status = 200) {
  const api = c.get('api')
  const cursor = c.req.query('cursor')
  const [jobs, connections] = await Promise.all([
    api.get<JobPage>(
      `/svc/quantum-reasoning/jobs?limit=20${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
    ),
    api.get<{ data: Connection[] }>('/svc/quantum-reasoning/provider-connections'),
  ])
  const frame = await frameOf(c, 'Reasoning jobs', 'reasoning')
  const admin = isAdmin(c)
  return html(
    c,
    <Frame frame={frame}>
      <h1>Reasoning jobs</h1>
      {flash ? <Notice kind={flash.kind}>{flash.text}</Notice> : null}
      <Unavailable result={jobs} what="Reasoning jobs" />
      {jobs.ok ? (
        <>
          <p class="lead">
            Models {jobs.body.capabilities.allowed_models.join(', ') || 'none'} · real hardware{' '}
            {jobs.body.capabilities.real_enabled ? 'enabled' : 'not enabled'} ·{' '}
            {jobs.body.capabilities.remaining_credits} credits left
          </p>
          <TableRegion label="Reasoning jobs">
            <table>
              <thead>
                <tr>
                  <th scope="col">Job</th>
                  <th scope="col">Model</th>
                  <th scope="col">Status</th>
                  <th scope="col">Created</th>
                </tr>
              </thead>
              <tbody>
                {jobs.body.jobs.map((j) => (
                  <tr>
                    <td>
                      <a href={`/console/reasoning/jobs/${j.id}`}>
                        <code>{j.id}</code>
                      </a>
                    </td>
                    <td>{j.model}</td>
                    <td>{j.status}</td>
                    <td class="nowrap">{formatDate(j.created_at)}</td>
                  </tr>
                ))}
                {jobs.body.jobs.length === 0 ? (
                  <tr>
                    <td colspan={4} class="muted">
                      No jobs.
                    </td>
                  </tr>
                ) : null}
              </tbody>
            </table>
          </TableRegion>
          {jobs.body.next_cursor ? (
            <p>
              <a href={`/console/reasoning?cursor=${encodeURIComponent(jobs.body.next_cursor)}`}>
                Older jobs
              </a>
            </p>
          ) : null}
        </>
      ) : null}

      <h2 id="qpu-h">QPU provider connections</h2>
      <Unavailable result={connections} what="Provider connections" />
      {connections.ok ? (
        <TableRegion label="QPU provider connections">
          <table>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Provider</th>
                <th scope="col">Target</th>
                <th scope="col">Created</th>
                {admin ? <th scope="col">Actions</th> : null}
              </tr>
            </thead>
            <tbody>
              {connections.body.data.map((k) => (
                <tr>
                  <td>{k.name}</td>
                  <td>
                    {k.kind} <span class="hint mono">{k.base_url}</span>
                  </td>
                  <td>{k.target}</td>
                  <td class="nowrap">{formatDate(k.created_at)}</td>
                  {admin ? (
                    <td>
                      <div class="actions">
                        <form
                          method="post"
                          action={`/console/reasoning/connections/${k.id}/test`}
                          class="inline"
                        >
                          <CsrfField csrf={frame.csrf} />
                          <button type="submit" class="secondary small" aria-label={`Test ${k.name}`}>
                            Test
                          </button>
                        </form>
                        <form
                          method="post"
                          action={`/console/reasoning/connections/${k.id}/delete`}
                          class="inline"
                          data-confirm={`Delete the connection “${k.name}” and its stored credential?`}
                        >
                          <CsrfField csrf={frame.csrf} />
                          <button type="submit" class="danger small" aria-label={`Delete ${k.name}`}>
                            Delete
                          </button>
                        </form>
                      </div>
                    </td>
                  ) : null}
                </tr>
              ))}
              {connections.body.data.length === 0 ? (
                <tr>
                  <td colspan={admin ? 5 : 4} class="muted">
                    No connections.
                  </td>
                </tr>
              ) : null}
            </tbody>
          </table>
        </TableRegion>
      ) : null}
      {admin && connections.ok ? (
        <form method="post" action="/console/reasoning/connections" class="panel" aria-labelledby="qpu-new-h">
          <h3 id="qpu-new-h">Connect a provider</h3>
          <CsrfField csrf={frame.csrf} />
          <div class="form-grid">
            <div class="field">
              <label for="qpu-name">Name</label>
              <input id="qpu-name" name="name" type="text" required maxlength={100} />
            </div>
            <div class="field">
              <label for="qpu-key">
                API key<span class="hint">Stored encrypted, never shown again</span>
              </label>
              <input id="qpu-key" name="api_key" type="password" required autocomplete="off" />
            </div>
          </div>
          <input type="hidden" name="kind" value="ionq" />
          <button type="submit">Connect IonQ</button>
        </form>
      ) : null}
    </Frame>,
    status,
  )
}

async function renderJob(c: ConsoleContext, jobId: string, flash?: Flash) {
  const found = await c
    .get('api')
    .get<{ job: Job }>(`/svc/quantum-reasoning/jobs/${encodeURIComponent(jobId)}`)
  const frame = await frameOf(c, 'Reasoning job', 'reasoning')
  const job = found.ok ? found.body.job : null
  const cancellable = job && job.status === 'queued'
  const finished = job && ['completed', 'classical_fallback', 'failed', 'cancelled'].includes(job.status)
  return html(
    c,
    <Frame frame={frame}>
      <h1>Reasoning job</h1>
      {flash ? <Notice kind={flash.kind}>{flash.text}</Notice> : null}
      <Unavailable result={found} what="This job" />
      {job ? (
        <>
          <dl class="facts panel">
            <dt>Job</dt>
            <dd>
              <code>{job.id}</code>
            </dd>
            <dt>Status</dt>
            <dd>
              {job.status}
              {job.error ? ` — ${job.error.code}: ${job.error.message}` : ''}
              {job.fallback_reason ? ` (classical fallback: ${job.fallback_reason})` : ''}
            </dd>
            <dt>Model</dt>
            <dd>
              {job.model} · scoring {job.scoring_method}
            </dd>
            <dt>Hardware</dt>
            <dd>
              {job.requested_real ? 'real QPU requested' : 'simulation'} · {job.real_request_status}
              {job.used_real_qubits ? ' · ran on real qubits' : ''}
            </dd>
            <dt>Attempts</dt>
            <dd>
              {job.attempt_count} of {job.max_attempts} · outcome {job.outcome_state}
            </dd>
            <dt>Selection</dt>
            <dd>
              {job.selected_index === undefined
                ? '—'
                : `candidate ${job.selected_index} by ${job.selector_backend ?? 'the selector'}${job.selector_confidence === undefined ? '' : ` (confidence ${job.selector_confidence.toFixed(2)})`}`}
            </dd>
            <dt>Usage</dt>
            <dd>
              <code>{JSON.stringify(job.usage)}</code>
            </dd>
            <dt>Receipt</dt>
            <dd>{job.inference_receipt_id ? <code>{job.inference_receipt_id}</code> : '—'}</dd>
            <dt>Created</dt>
            <dd>{formatDate(job.created_at)}</dd>
          </dl>
          {job.result ? (
            <section aria-labelledby="job-result">
              <h2 id="job-result">Result</h2>
              <pre>{job.result}</pre>
            </section>
          ) : null}
          {job.candidates?.length ? (
            <section aria-labelledby="job-candidates">
              <h2 id="job-candidates">Candidates and selection evidence</h2>
              <ol start={0}>
                {job.candidates.map((candidate, i) => (
                  <li data-selected={i === job.selected_index ? 'true' : undefined}>
                    {i === job.selected_index ? <strong>selected </strong> : null}
                    <pre>{JSON.stringify(candidate, null, 2)}</pre>
                  </li>
                ))}
              </ol>
            </section>
          ) : null}
          {cancellable || finished ? (
            <form
              method="post"
              action={`/console/reasoning/jobs/${job.id}/delete`}
              data-confirm={cancellable ? 'Cancel this job?' : 'Erase this finished job’s content?'}
            >
              <CsrfField csrf={frame.csrf} />
              <button type="submit" class="danger">
                {cancellable ? 'Cancel job' : 'Delete job content'}
              </button>
            </form>
          ) : null}
        </>
      ) : null}
      <p>
        <a href="/console/reasoning">All jobs</a>
      </p>
    </Frame>,
  )
}

// --- Telemetry -------------------------------------------------------------------------------

interface Ingestion {
  created_at: string
  request_id: string
  signal: string
  items: number
  rejected_items: number
  received_bytes: number
  outcome: string
  error_code: string | null
  duration_ms: number
}

interface Totals {
  signal: string
  requests: number
  forwarded_requests: number
  failed_requests: number
  received_bytes: number
  last_ingested_at: string | null
}

async function renderTelemetry(c: ConsoleContext) {
  const api = c.get('api')
  const [status, ingestions] = await Promise.all([
    api.get<{
      collector: {
        configured: boolean
        reachable: boolean | null
        probe_ms: number | null
        detail: string | null
      }
      recent: { window_seconds: number; requests: number; error_rate: number }
    }>('/platform/v1/telemetry/status'),
    api.get<{ data: Ingestion[]; totals: Totals[] }>('/platform/v1/telemetry/ingestions?limit=50'),
  ])
  const frame = await frameOf(c, 'Telemetry', 'telemetry')
  return html(
    c,
    <Frame frame={frame}>
      <h1>Telemetry</h1>
      <p class="lead">
        OTLP traces, metrics and logs sent to <code>/otlp/v1/*</code> with a service token (audience{' '}
        <code>internal-service</code>, see Service accounts) or an API key with <code>telemetry:write</code>.
      </p>
      <Unavailable result={status} what="Receiver status" />
      {status.ok ? (
        <div class="cards">
          <div class="card">
            <h2>Collector</h2>
            <p class="big">
              {!status.body.collector.configured
                ? 'not configured'
                : status.body.collector.reachable
                  ? 'reachable'
                  : 'unreachable'}
            </p>
            <p class="muted">{status.body.collector.detail ?? ''}</p>
          </div>
          <div class="card">
            <h2>Last {Math.round(status.body.recent.window_seconds / 60)} min</h2>
            <p class="big">{formatNumber(status.body.recent.requests)} requests</p>
            <p class="muted">error rate {(status.body.recent.error_rate * 100).toFixed(1)}%</p>
          </div>
        </div>
      ) : null}
      <Unavailable result={ingestions} what="Ingestions" />
      {ingestions.ok ? (
        <>
          <h2>Totals per signal</h2>
          <TableRegion label="Totals per signal">
            <table>
              <thead>
                <tr>
                  <th scope="col">Signal</th>
                  <th scope="col" class="num">
                    Requests
                  </th>
                  <th scope="col" class="num">
                    Forwarded
                  </th>
                  <th scope="col" class="num">
                    Failed
                  </th>
                  <th scope="col" class="num">
                    Bytes
                  </th>
                  <th scope="col">Last</th>
                </tr>
              </thead>
              <tbody>
                {ingestions.body.totals.map((t) => (
                  <tr>
                    <td>{t.signal}</td>
                    <td class="num">{formatNumber(t.requests)}</td>
                    <td class="num">{formatNumber(t.forwarded_requests)}</td>
                    <td class="num">{formatNumber(t.failed_requests)}</td>
                    <td class="num">{formatNumber(t.received_bytes)}</td>
                    <td class="nowrap">{formatDate(t.last_ingested_at)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </TableRegion>
          <h2>Newest ingestions</h2>
          <TableRegion label="Newest ingestions">
            <table>
              <thead>
                <tr>
                  <th scope="col">Time</th>
                  <th scope="col">Request id</th>
                  <th scope="col">Signal</th>
                  <th scope="col">Outcome</th>
                  <th scope="col" class="num">
                    Items
                  </th>
                  <th scope="col" class="num">
                    Latency
                  </th>
                </tr>
              </thead>
              <tbody>
                {ingestions.body.data.map((i) => (
                  <tr>
                    <td class="nowrap">{formatDate(i.created_at)}</td>
                    <td>
                      <code>{i.request_id}</code>
                    </td>
                    <td>{i.signal}</td>
                    <td>
                      {i.outcome}
                      {i.error_code ? <span class="hint">{i.error_code}</span> : null}
                    </td>
                    <td class="num">
                      {formatNumber(i.items)}
                      {i.rejected_items ? ` (${i.rejected_items} rejected)` : ''}
                    </td>
                    <td class="num">{i.duration_ms} ms</td>
                  </tr>
                ))}
                {ingestions.body.data.length === 0 ? (
                  <tr>
                    <td colspan={6} class="muted">
                      Nothing ingested yet.
                    </td>
                  </tr>
                ) : null}
              </tbody>
            </table>
          </TableRegion>
        </>
      ) : null}
    </Frame>,
  )
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

export function workloadPages(app: Hono<ConsoleApp>): void {
  app.get('/documents', (c) => {
    const done = c.req.query('deleted')
    return renderDocuments(c, done ? { kind: 'ok', text: 'Document deleted.' } : undefined)
  })

  app.post('/documents', async (c) => {
    const uploaded = await c
      .get('api')
      .send<{ source: string; status: string; chunk_count: number }>('POST', '/svc/documents/upload', {
        source: formString(c, 'source'),
        content: formString(c, 'content'),
      })
    if (!uploaded.ok)
      return renderDocuments(c, { kind: 'error', text: uploaded.error.message }, uploaded.status)
    return renderDocuments(
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
    const found = await c
      .get('api')
      .get<Document & { chunks: { index: number; text: string; embedded: boolean }[] }>(
        `/svc/documents/${encodeURIComponent(id)}`,
      )
    const frame = await frameOf(c, 'Document', 'documents')
    return html(
      c,
      <Frame frame={frame}>
        <h1>{found.ok ? found.body.source : 'Document'}</h1>
        <Unavailable result={found} what="This document" />
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
    if (!deleted.ok) return renderDocuments(c, { kind: 'error', text: deleted.error.message }, deleted.status)
    return c.redirect('/console/documents?deleted=1', 303)
  })

  app.get('/reasoning', (c) => renderReasoning(c))

  app.get('/reasoning/jobs/:id', (c) => {
    const id = c.req.param('id')
    return renderJob(c, UUID.test(id) ? id : '00000000-0000-0000-0000-000000000000')
  })

  app.post('/reasoning/jobs/:id/delete', async (c) => {
    const id = c.req.param('id')
    const result = await c.get('api').send('DELETE', `/svc/quantum-reasoning/jobs/${encodeURIComponent(id)}`)
    return renderJob(
      c,
      id,
      result.ok ? { kind: 'ok', text: 'Done.' } : { kind: 'error', text: result.error.message },
    )
  })

  app.post('/reasoning/connections', async (c) => {
    const made = await c.get('api').send<Connection>('POST', '/svc/quantum-reasoning/provider-connections', {
      name: formString(c, 'name'),
      kind: formString(c, 'kind') || 'ionq',
      api_key: formString(c, 'api_key'),
    })
    return renderReasoning(
      c,
      made.ok
        ? { kind: 'ok', text: `Connected “${made.body.name}”.` }
        : { kind: 'error', text: made.error.message },
      made.ok ? 201 : made.status,
    )
  })

  app.post('/reasoning/connections/:id/test', async (c) => {
    const tested = await c
      .get('api')
      .send<{ test?: { ok: boolean; error: { message: string } | null } }>(
        'POST',
        `/svc/quantum-reasoning/provider-connections/${encodeURIComponent(c.req.param('id'))}/test`,
      )
    const test = tested.ok ? tested.body.test : undefined
    return renderReasoning(
      c,
      !tested.ok
        ? { kind: 'error', text: tested.error.message }
        : test && !test.ok
          ? {
              kind: 'error',
              text: `The provider refused the credential: ${test.error?.message ?? 'unknown error'}`,
            }
          : { kind: 'ok', text: 'The provider accepted the credential.' },
    )
  })

  app.post('/reasoning/connections/:id/delete', async (c) => {
    const deleted = await c
      .get('api')
      .send('DELETE', `/svc/quantum-reasoning/provider-connections/${encodeURIComponent(c.req.param('id'))}`)
    return renderReasoning(
      c,
      deleted.ok
        ? { kind: 'ok', text: 'Connection deleted.' }
        : { kind: 'error', text: deleted.error.message },
      deleted.ok ? 200 : deleted.status,
    )
  })

  app.get('/telemetry', (c) => renderTelemetry(c))
}
