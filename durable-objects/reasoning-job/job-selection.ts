/**
 * How a job's selection ends it, whichever selector made it (the simulator in job-steps.ts, a QPU
 * in job-qpu.ts, the classical argmax when hardware could not be used): the evidence recorded on
 * each candidate (`classical_choice`, `quantum_frequency`), then the terminal state with the work
 * it implies (the usage settled, the receipt issued).
 */
import type { JobHost } from './job-host'
import type { CandidateRow, JobChange, JobRow } from './reasoning-job.store'
import { classicalSelector } from './selector'

/** The candidates' scores, in candidate order (the scoring step stored them as evidence). */
export function candidateScores(candidates: readonly CandidateRow[]): number[] {
  return candidates.map((c) => Number(c.evidence_json?.score ?? 0))
}

export function recordSelectionEvidence(
  host: Pick<JobHost, 'store'>,
  candidates: readonly CandidateRow[],
  classicalIndex: number,
  frequencies: readonly number[],
): void {
  for (const [i, c] of candidates.entries()) {
    host.store.setEvidence(c.idx, {
      ...(c.evidence_json ?? {}),
      classical_choice: i === classicalIndex,
      ...(frequencies.length ? { quantum_frequency: frequencies[i] ?? 0 } : {}),
    })
  }
}

/** The selection is made: the job ends, its token reservation is settled, its receipt is due. */
export function finishSelection(host: JobHost, change: JobChange, now: number): void {
  host.commit(
    {
      outcome_state: 'committed',
      ...change,
      attempt_count: 0,
      next_attempt_at: null,
      completed_at: now,
    },
    now,
  )
  host.store.unschedule('advance')
  host.store.schedule('meter_settle', now)
  host.store.schedule('issue_receipt', now)
}

/** The classical argmax answers: real hardware was not used (`realRequestStatus` says why). */
export function finishClassical(
  host: JobHost,
  realRequestStatus: JobRow['real_request_status'],
  error: { code: string; message: string } | null,
  change: JobChange = {},
): void {
  const candidates = host.store.candidates()
  const classical = classicalSelector.select(candidateScores(candidates))
  recordSelectionEvidence(host, candidates, classical.index, [])
  finishSelection(
    host,
    {
      status: 'classical_fallback',
      fallback_reason: 'selector_unreachable',
      selected_index: classical.index,
      selector_backend: classical.backend,
      selector_confidence: classical.confidence,
      real_request_status: realRequestStatus,
      error,
      ...change,
    },
    host.now(),
  )
}
