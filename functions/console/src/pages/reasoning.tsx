/**
 * Reasoning: quantum-reasoning jobs (the list with the workspace's capabilities; a job with its
 * candidates, selection evidence, result and receipt; a waiting job's place in the run queue; cancel
 * a queued job or erase a finished one's content) and the QPU provider connections (connect, test, delete). A client of
 * /svc/quantum-reasoning/*; when the plan lacks the feature the page shows the API's refusal.
 */

import type { Hono } from 'hono'
import {
  type InferenceReceiptResponse,
  RECEIPT_SIGNING_ALGORITHM,
} from '../../../../durable-objects/reasoning-job/inference-receipt'
import type { ReasoningJob as Job, JobPage } from '../../../../durable-objects/reasoning-job/job.schemas'
import { UUID } from '../../../../shared/http/uuid'
import type { ProviderConnection, ProviderConnectionList, ProviderConnectionTested } from '../api-types'
import { Actions, ApiRefusal, DataTable, Field, type Flash, FlashNotice, PostAction } from '../components'
import type { ConsoleApp, ConsoleContext } from '../console.context'
import type { ApiResult } from '../console-api'
import { CsrfField, Frame, formatDate, formatNumber } from '../layout'
import { formString, frameOf, html, isAdmin } from '../page'

/** The selection evidence shown for each candidate (all of its fields are one click away). */
const EVIDENCE = [
  'score',
  'quality',
  'consensus',
  'quantum_frequency',
  'mean_logprob',
  'tokens',
  'provider',
  'finish_reason',
] as const

/** A job's status as a person reads it: a waiting job says where it is in line. */
function statusText(job: Job): string {
  return job.queue_position === undefined
    ? job.status
    : `${job.status} · waiting for a run slot, ${job.queue_position === 1 ? 'next in line' : `number ${job.queue_position} in line`}`
}

type Connection = ProviderConnection

/** The latest credential check of a connection, kept by the API (`last_test`). */
function LastTest({ test }: { test: Connection['last_test'] }) {
  if (!test) return <span class="hint">never</span>
  return (
    <>
      <span class={`badge ${test.ok ? 'allowed' : 'blocked'}`}>{test.ok ? 'accepted' : 'refused'}</span>{' '}
      <span class="nowrap">{formatDate(test.tested_at)}</span>
      {test.error ? <span class="hint"> {test.error.message}</span> : null}
    </>
  )
}

async function renderReasoning(c: ConsoleContext, flash?: Flash, status = 200) {
  const api = c.get('api')
  const cursor = c.req.query('cursor')
  const [jobs, connections] = await Promise.all([
    api.get<JobPage>(
      `/svc/quantum-reasoning/jobs?limit=20${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
    ),
    api.get<ProviderConnectionList>('/svc/quantum-reasoning/provider-connections'),
  ])
  const frame = await frameOf(c, 'Reasoning jobs', 'reasoning')
  const admin = isAdmin(c)
  return html(
    c,
    <Frame frame={frame}>
      <h1>Reasoning jobs</h1>
      <FlashNotice flash={flash} />
      <ApiRefusal result={jobs} what="Reasoning jobs" />
      {jobs.ok ? (
        <>
          <p class="lead">
            Models {jobs.body.capabilities.allowed_models.join(', ') || 'none'} · real hardware{' '}
            {jobs.body.capabilities.real_enabled ? 'enabled' : 'not enabled'} ·{' '}
            {jobs.body.capabilities.remaining_credits} credits left
          </p>
          <DataTable
            label="Reasoning jobs"
            columns={['Job', 'Model', 'Status', 'Created']}
            rows={jobs.body.jobs}
            empty="No jobs."
            row={(j) => (
              <tr>
                <td>
                  <a href={`/console/reasoning/jobs/${j.id}`}>
                    <code>{j.id}</code>
                  </a>
                </td>
                <td>{j.model}</td>
                <td>{statusText(j)}</td>
                <td class="nowrap">{formatDate(j.created_at)}</td>
              </tr>
            )}
          />
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
      <ApiRefusal result={connections} what="Provider connections" />
      {connections.ok ? (
        <DataTable
          label="QPU provider connections"
          columns={['Name', 'Provider', 'Target', 'Created', 'Last test', admin ? 'Actions' : null]}
          rows={connections.body.data}
          empty="No connections."
          row={(k) => (
            <tr>
              <td>{k.name}</td>
              <td>
                {k.kind} <span class="hint mono">{k.base_url}</span>
              </td>
              <td class="nowrap">{k.target}</td>
              <td class="nowrap">{formatDate(k.created_at)}</td>
              <td>
                <LastTest test={k.last_test} />
              </td>
              {admin ? (
                <td>
                  <Actions>
                    <PostAction
                      action={`/console/reasoning/connections/${k.id}/test`}
                      csrf={frame.csrf}
                      label="Test"
                      name={`Test ${k.name}`}
                    />
                    <PostAction
                      action={`/console/reasoning/connections/${k.id}/delete`}
                      csrf={frame.csrf}
                      label="Delete"
                      name={`Delete ${k.name}`}
                      kind="danger"
                      confirm={`Delete the connection “${k.name}” and its stored credential?`}
                    />
                  </Actions>
                </td>
              ) : null}
            </tr>
          )}
        />
      ) : null}
      {admin && connections.ok ? (
        <form method="post" action="/console/reasoning/connections" class="panel" aria-labelledby="qpu-new-h">
          <h3 id="qpu-new-h">Connect a provider</h3>
          <CsrfField csrf={frame.csrf} />
          <div class="form-grid">
            <Field id="qpu-name" label="Name">
              <input id="qpu-name" name="name" type="text" required maxlength={100} />
            </Field>
            <Field id="qpu-key" label="API key" hint="Stored encrypted, never shown again">
              <input id="qpu-key" name="api_key" type="password" required autocomplete="off" />
            </Field>
          </div>
          <input type="hidden" name="kind" value="ionq" />
          <button type="submit">Connect IonQ</button>
        </form>
      ) : null}
    </Frame>,
    status,
  )
}

/**
 * The job's signed inference receipt: who signed it with which key, where it sits in the audit log,
 * and the DSSE envelope itself, to verify offline against the JWKS.
 */
function Receipt({ result }: { result: ApiResult<InferenceReceiptResponse> }) {
  return (
    <section aria-labelledby="job-receipt" class="panel">
      <h2 id="job-receipt">Inference receipt</h2>
      <ApiRefusal result={result} what="The receipt" />
      {result.ok ? (
        <>
          <dl class="facts">
            <dt>Receipt</dt>
            <dd>
              <code>{result.body.receipt_id}</code>
            </dd>
            <dt>Issued</dt>
            <dd>{formatDate(result.body.statement.issued_at)}</dd>
            <dt>Signed</dt>
            <dd>
              {RECEIPT_SIGNING_ALGORITHM} by key{' '}
              {result.body.envelope.signatures.map((s) => (
                <code>{s.keyid}</code>
              ))}{' '}
              · verify with <a href={result.body.jwks_url}>the published keys</a>
            </dd>
            <dt>Audit log</dt>
            <dd>
              <a href={`/console/audit-log?before=${result.body.audit_log.index + 1}`}>
                entry {result.body.audit_log.index}
              </a>{' '}
              of <code>{result.body.audit_log.origin}</code>
            </dd>
            <dt>Prompt digest</dt>
            <dd>
              <code>{result.body.statement.prompt_digest ?? '— (erased before the receipt)'}</code>
            </dd>
          </dl>
          <details>
            <summary>The signed envelope (DSSE)</summary>
            <pre class="wrap">{JSON.stringify(result.body.envelope, null, 2)}</pre>
          </details>
        </>
      ) : null}
    </section>
  )
}

async function renderJob(c: ConsoleContext, jobId: string, flash?: Flash) {
  const path = `/svc/quantum-reasoning/jobs/${encodeURIComponent(jobId)}`
  const found = await c.get('api').get<{ job: Job }>(path)
  const frame = await frameOf(c, 'Reasoning job', 'reasoning')
  const job = found.ok ? found.body.job : null
  const receipt = job?.inference_receipt_id
    ? await c.get('api').get<InferenceReceiptResponse>(`${path}/receipt`)
    : null
  const cancellable = job && job.status === 'queued'
  const finished = job && ['completed', 'classical_fallback', 'failed', 'cancelled'].includes(job.status)
  // The detail carries the prompt until the content is erased (a DELETE of a finished job).
  const erased = finished && job.prompt === undefined
  return html(
    c,
    <Frame frame={frame}>
      <h1>Reasoning job</h1>
      <FlashNotice flash={flash} />
      <ApiRefusal result={found} what="This job" />
      {job ? (
        <>
          <dl class="facts panel">
            <dt>Job</dt>
            <dd>
              <code>{job.id}</code>
            </dd>
            <dt>Status</dt>
            <dd data-status={job.status}>
              {statusText(job)}
              {job.error ? ` — ${job.error.code}: ${job.error.message}` : ''}
              {job.fallback_reason ? ` (classical fallback: ${job.fallback_reason})` : ''}
            </dd>
            <dt>Model</dt>
            <dd>
              {job.model} · scoring {job.scoring_method}
            </dd>
            <dt>Hardware</dt>
            <dd>
              {job.requested_real ? 'real QPU requested' : 'simulation'} ·{' '}
              {job.real_request_status.replaceAll('_', ' ')}
              {job.used_real_qubits ? ' · ran on real qubits' : ''}
            </dd>
            <dt>Attempts</dt>
            <dd>
              {/* attempt_count counts the failed tries of the current step (0: none failed). */}
              {job.attempt_count === 0
                ? 'no failed tries'
                : `${job.attempt_count} failed ${job.attempt_count === 1 ? 'try' : 'tries'} of at most ${job.max_attempts}`}{' '}
              · outcome {job.outcome_state.replaceAll('_', ' ')}
            </dd>
            <dt>Selection</dt>
            <dd>
              {job.selected_index === undefined
                ? '—'
                : `candidate ${job.selected_index} by ${job.selector_backend ?? 'the selector'}${job.selector_confidence === undefined ? '' : ` (confidence ${job.selector_confidence.toFixed(2)})`}`}
            </dd>
            <dt>Usage</dt>
            <dd>
              {Object.entries(job.usage)
                .map(([k, v]) => `${k.replaceAll('_', ' ')} ${formatNumber(v)}`)
                .join(' · ') || '—'}
            </dd>
            <dt>Receipt</dt>
            <dd>{job.inference_receipt_id ? <code>{job.inference_receipt_id}</code> : '—'}</dd>
            <dt>Created</dt>
            <dd>{formatDate(job.created_at)}</dd>
          </dl>
          {job.prompt === undefined ? null : (
            <section aria-labelledby="job-prompt">
              <h2 id="job-prompt">Prompt</h2>
              <pre class="wrap">{job.prompt}</pre>
            </section>
          )}
          {job.result ? (
            <section aria-labelledby="job-result">
              <h2 id="job-result">Result</h2>
              <pre class="wrap">{job.result}</pre>
            </section>
          ) : null}
          {job.candidates?.length ? (
            <section aria-labelledby="job-candidates">
              <h2 id="job-candidates">Candidates and selection evidence</h2>
              <ol start={0} class="candidates">
                {job.candidates.map((candidate, i) => (
                  <li
                    class={`panel${i === job.selected_index ? ' selected' : ''}`}
                    data-selected={i === job.selected_index ? 'true' : undefined}
                  >
                    <p>
                      {i === job.selected_index ? <span class="badge active">selected</span> : null}{' '}
                      {EVIDENCE.filter((k) => candidate[k] !== undefined)
                        .map((k) => `${k.replaceAll('_', ' ')} ${String(candidate[k])}`)
                        .join(' · ')}
                    </p>
                    {candidate.content === null || candidate.content === undefined ? (
                      <p class="hint">Content erased.</p>
                    ) : (
                      <pre class="wrap">{String(candidate.content)}</pre>
                    )}
                    <details>
                      <summary>All fields of candidate {i}</summary>
                      <pre>{JSON.stringify(candidate, null, 2)}</pre>
                    </details>
                  </li>
                ))}
              </ol>
            </section>
          ) : null}
          {receipt ? <Receipt result={receipt} /> : null}
          {erased ? <p class="hint">This job’s content is erased.</p> : null}
          {cancellable || (finished && !erased) ? (
            <div class="form-actions">
              <PostAction
                action={`/console/reasoning/jobs/${job.id}/delete`}
                csrf={frame.csrf}
                label={cancellable ? 'Cancel job' : 'Delete job content'}
                kind="danger"
                small={false}
                confirm={cancellable ? 'Cancel this job?' : 'Erase this finished job’s content?'}
              />
            </div>
          ) : null}
        </>
      ) : null}
      <p>
        <a href="/console/reasoning">All jobs</a>
      </p>
    </Frame>,
  )
}

export function reasoningPages(app: Hono<ConsoleApp>): void {
  app.get('/reasoning', (c) => renderReasoning(c))

  app.get('/reasoning/jobs/:id', (c) => {
    const id = c.req.param('id')
    return renderJob(c, UUID.test(id) ? id : '00000000-0000-0000-0000-000000000000')
  })

  app.post('/reasoning/jobs/:id/delete', async (c) => {
    const id = c.req.param('id')
    const path = `/svc/quantum-reasoning/jobs/${encodeURIComponent(id)}`
    // The same DELETE cancels a queued job and erases a finished one: the status before says which.
    const before = await c.get('api').get<{ job: Job }>(path)
    const result = await c.get('api').send<{ job: Job }>('DELETE', path)
    return renderJob(
      c,
      id,
      !result.ok
        ? { kind: 'error', text: result.error.message }
        : before.ok && before.body.job.status === 'queued'
          ? { kind: 'ok', text: 'Job cancelled: it will not run, and its reserved credits are released.' }
          : { kind: 'ok', text: 'The job’s content is erased; its metadata, digests and scores are kept.' },
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
      .send<ProviderConnectionTested>(
        'POST',
        `/svc/quantum-reasoning/provider-connections/${encodeURIComponent(c.req.param('id'))}/test`,
      )
    if (!tested.ok) return renderReasoning(c, { kind: 'error', text: tested.error.message }, tested.status)
    const { connection, test } = tested.body
    return renderReasoning(
      c,
      test.ok
        ? { kind: 'ok', text: `The provider accepted the credential of “${connection.name}”.` }
        : {
            kind: 'error',
            text: `The provider refused the credential of “${connection.name}”: ${test.error?.message ?? 'unknown error'}`,
          },
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
}
