/** Bindings, configuration and per-request variables of the console worker (functions/console/wrangler.toml). */
import type { Context } from 'hono'
import type { DatabaseEnv } from '../../../shared/db/client'
import type { Workspace } from './api-types'
import type { ConsoleApi } from './console-api'
import type { ConsoleMode } from './layout'
import type { ConsoleSession } from './session'

export interface ConsoleEnv extends DatabaseEnv {
  /**
   * The gateway (svc-gateway): pages read and change things only through the product's API, as a
   * client of the gateway's whole request path (./console-api.ts).
   */
  GATEWAY: Fetcher
  /** Console sign-ins end this long after they began (seconds, default 28800 = 8 h). */
  CONSOLE_SESSION_TTL_SECONDS?: string
  /** ... or after this long without a request (seconds, default 1800). */
  CONSOLE_SESSION_IDLE_SECONDS?: string
}

export interface ConsoleVariables {
  /** The gateway's request id of this request. */
  requestId: string
  /** The URL clients reach the gateway at (PUBLIC_BASE_URL, or a local stack's own origin). */
  baseUrl: string
  session: ConsoleSession
  api: ConsoleApi
  csrf: string
  mode: ConsoleMode
  workspace: Workspace
  /** The form fields of a POST (after the CSRF check). */
  form: Record<string, string | string[]>
}

export interface ConsoleApp {
  Bindings: ConsoleEnv
  Variables: ConsoleVariables
}

export type ConsoleContext = Context<ConsoleApp>
