/**
 * What the parts of a running turn share: the object it runs in (LoopHost), the turn's execution
 * (its abort controller and the model call in flight), and TurnWriter, which writes the turn's
 * events and the conversation entries the model reads, and stops the turn's code once the turn
 * was stopped (cancel, timeout).
 */
import type { AgentEventType, EventDataOf } from './agent-events'
import type { AgentRunEnv } from './agent-run.context'
import type { RunStore } from './agent-run.store'
import type { AgentSettings } from './agent-settings'

export type DurableEventType = Exclude<AgentEventType, 'heartbeat'>

/** What the turn's code needs from its object. */
export interface LoopHost {
  readonly store: RunStore
  readonly settings: AgentSettings
  readonly workerEnv: AgentRunEnv
  now(): number
  /** Persists the event (next seq), then writes it to every connection following the run. */
  emit<T extends DurableEventType>(turnId: string, type: T, data: EventDataOf<T>): void
  /** Called once when a turn has written its terminal event (metering settles here). */
  turnEnded(turnId: string): void
}

/** Thrown inside the loop when its turn was stopped (cancel, timeout) while it awaited. */
export class TurnStopped extends Error {
  constructor() {
    super('the turn was stopped')
    this.name = 'TurnStopped'
  }
}

export interface TurnExecution {
  readonly turnId: string
  readonly controller: AbortController
  /**
   * The model call in progress: its prompt size and the text streamed so far. When the turn is
   * stopped mid-call (cancel, timeout), the provider's usage report never arrives, so what was
   * used is estimated from this (turn-usage.ts, `chargeStoppedCall`).
   */
  inFlight?: { promptTokens: number; text: string; provider: string } | null
}

/** Writes what one executing turn says: its events and the tool answers the model reads. */
export class TurnWriter {
  constructor(
    readonly host: LoopHost,
    readonly exec: TurnExecution,
  ) {}

  get store(): RunStore {
    return this.host.store
  }

  get turnId(): string {
    return this.exec.turnId
  }

  /** Persists and sends an event of this turn; throws TurnStopped once the turn was stopped. */
  say<T extends DurableEventType>(type: T, data: EventDataOf<T>): void {
    if (this.exec.controller.signal.aborted) throw new TurnStopped()
    this.host.emit(this.exec.turnId, type, data)
  }

  /** The answer to a tool call, as the model reads it in the conversation. */
  toolMessage(callId: string, content: string): void {
    this.store.addMessage(this.exec.turnId, { role: 'tool', tool_call_id: callId, content })
  }
}
