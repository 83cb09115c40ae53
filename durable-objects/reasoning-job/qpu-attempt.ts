/**
 * One real-hardware attempt of a reasoning job, as the ReasoningJob object stores it: a plain,
 * serialisable record and the pure transitions the queue consumer's calls and the object's alarm
 * drive (docs/quantum-selector.md, "Attempt states"):
 *
 *   prepared ─claim→ submitting(lease) ─submitted→ submitted ─finished→ finished
 *        │                 │  └─outcome_unknown→ outcome_unknown ─found→ submitted (reconciled)
 *        │                 │                               └─missing, or lookups spent→ abandoned
 *        └─────────────────┴─unreachable→ abandoned (or outcome_unknown when a create may have landed)
 *
 * Only one consumer submits at a time (a lease with a token); a new lease is granted when the old
 * one expired (its holder died), and every submitter looks the attempt up at the provider first,
 * so one attempt never makes two provider jobs. Everything after the provider job id is known is
 * an idempotent read: the first outcome recorded wins, later ones are ignored.
 */
import type { QpuClaim, QpuOutcome, QpuSubmission } from './quantum/qpu-queue'

export const QPU_LEASE_MS = 20_000
/** How long a lost submission may take to show in the provider's job list before it counts as missing. */
export const RECONCILE_GRACE_MS = 30_000
/** Lookups of an unknown outcome (provider unreachable) before the attempt is given up. */
export const MAX_RECONCILE_TRIES = 8

export type QpuAttemptStatus =
  | 'prepared'
  | 'submitting'
  | 'submitted'
  | 'outcome_unknown'
  | 'finished'
  | 'abandoned'

export interface QpuAttempt {
  readonly attemptId: string
  readonly status: QpuAttemptStatus
  readonly submission: QpuSubmission
  readonly lease: { readonly token: string; readonly until: number } | null
  readonly providerJobId: string | null
  /** Found at the provider by metadata instead of created by this attempt's own create call. */
  readonly adopted: boolean
  /** Went through outcome_unknown and was found again: the job's outcome_state is `reconciled`. */
  readonly reconciled: boolean
  readonly unknownSince: number | null
  readonly reconcileTries: number
  readonly outcome: QpuOutcome | null
  /** Why the attempt was given up (abandoned), for the job's error message. */
  readonly detail: string | null
}

export function newAttempt(attemptId: string, submission: QpuSubmission): QpuAttempt {
  return {
    attemptId,
    status: 'prepared',
    submission,
    lease: null,
    providerJobId: null,
    adopted: false,
    reconciled: false,
    unknownSince: null,
    reconcileTries: 0,
    outcome: null,
    detail: null,
  }
}

export function isSettled(a: QpuAttempt): boolean {
  return a.status === 'finished' || a.status === 'abandoned'
}

/** A consumer asks what to do; `token` is the lease it gets if it is to submit. */
export function claim(a: QpuAttempt, now: number, token: string): { attempt: QpuAttempt; claim: QpuClaim } {
  if (isSettled(a) || a.status === 'outcome_unknown') return { attempt: a, claim: { kind: 'done' } }
  if (a.providerJobId !== null) {
    return {
      attempt: a,
      claim: { kind: 'poll', token, providerJobId: a.providerJobId, account: a.submission.account },
    }
  }
  if (a.lease && a.lease.until > now)
    return { attempt: a, claim: { kind: 'busy', retryAfterMs: a.lease.until - now } }
  const attempt: QpuAttempt = { ...a, status: 'submitting', lease: { token, until: now + QPU_LEASE_MS } }
  return { attempt, claim: { kind: 'submit', token, submission: a.submission } }
}

/** The lease holder gives it back after a transient error; a later submitter looks the job up first. */
export function release(a: QpuAttempt, token: string): QpuAttempt {
  if (a.lease?.token !== token) return a
  return { ...a, lease: null }
}

export function submitted(a: QpuAttempt, providerJobId: string, adopted: boolean): QpuAttempt {
  if (isSettled(a) || a.providerJobId !== null) return a
  return { ...a, status: 'submitted', providerJobId, adopted, lease: null }
}

export function outcomeUnknown(a: QpuAttempt, now: number, detail: string): QpuAttempt {
  if (isSettled(a) || a.providerJobId !== null) return a
  return { ...a, status: 'outcome_unknown', lease: null, unknownSince: a.unknownSince ?? now, detail }
}

export function finished(a: QpuAttempt, outcome: QpuOutcome): QpuAttempt {
  if (isSettled(a)) return a
  return { ...a, status: 'finished', outcome, lease: null }
}

/**
 * The provider could not be used (DLQ, no account, connection gone). Before any provider job id is
 * known, a create may still have landed (an earlier try whose answer was an error): that is an
 * unknown outcome for the reconciler, unless nothing was ever handed to a consumer.
 */
export function unreachable(a: QpuAttempt, now: number, detail: string): QpuAttempt {
  if (isSettled(a)) return a
  if (a.status === 'submitting') return outcomeUnknown(a, now, detail)
  return { ...a, status: 'abandoned', lease: null, detail }
}

/** The reconciler's lookup by metadata found the provider job: adopt it. */
export function reconcileFound(a: QpuAttempt, providerJobId: string): QpuAttempt {
  if (a.status !== 'outcome_unknown') return a
  return { ...a, status: 'submitted', providerJobId, adopted: true, reconciled: true }
}

/**
 * The lookup found nothing (`missing`) or failed (`failed`): abandon once the grace period has passed
 * (missing) or the lookups are spent (failed); otherwise look again later.
 */
export function reconcileMiss(
  a: QpuAttempt,
  now: number,
  how: 'missing' | 'failed',
  detail: string,
  graceMs: number = RECONCILE_GRACE_MS,
): QpuAttempt {
  if (a.status !== 'outcome_unknown') return a
  const tries = a.reconcileTries + 1
  const since = a.unknownSince ?? now
  if ((how === 'missing' && now - since >= graceMs) || tries >= MAX_RECONCILE_TRIES) {
    return {
      ...a,
      status: 'abandoned',
      reconcileTries: tries,
      detail:
        how === 'missing'
          ? `the provider has no job for this attempt (${a.detail ?? 'its submission was lost'}); nothing was run or billed`
          : `the provider stayed unreachable while reconciling (${detail})`,
    }
  }
  return { ...a, reconcileTries: tries }
}

/** When the reconciler should look again after a miss. */
export function nextReconcileAt(a: QpuAttempt, now: number): number {
  return now + Math.min(60_000, 2_000 * 2 ** Math.max(0, a.reconcileTries - 1))
}
