/**
 * The status the request log records for work whose HTTP answer began before the work ended:
 * streams (chat with stream: true, agent turns) and asynchronous jobs (reasoning jobs and their
 * QPU tasks). Their head said 200 (or 202) before the outcome was known, so the log records the
 * outcome the client finally saw, as the status a plain answer would have carried:
 *
 *   completed → 200
 *   failed    → 502  the stream ended in an error event (the model provider failed or was cut
 *                    off), a turn failed: what a JSON answer gets when every provider fails
 *   cancelled → 499  the client went away or cancelled first (nginx's "client closed request",
 *                    as Cloudflare's own logs show it)
 *
 * A job that fails or is cancelled is released and logs no request: its create call succeeded,
 * and the job itself says what became of it. docs/plans.md ("The request log") says the same for
 * readers of the console.
 */
export type WorkOutcome = 'completed' | 'failed' | 'cancelled'

export const CLIENT_CLOSED_REQUEST = 499

export function outcomeStatus(outcome: WorkOutcome): number {
  switch (outcome) {
    case 'completed':
      return 200
    case 'failed':
      return 502
    case 'cancelled':
      return CLIENT_CLOSED_REQUEST
  }
}
