import type { DatabaseEnv } from '../../../shared/db/client'
import type { FamilyEntrypoint } from '../../../shared/worker/family-entrypoint'

type FamilyBinding = Service<FamilyEntrypoint>

/** Bindings and configuration of the gateway (wrangler.toml at the repository root). */
export interface GatewayEnv extends DatabaseEnv {
  MODELS: FamilyBinding
  CHAT: FamilyBinding
  CODE: FamilyBinding
  KNOWLEDGE: FamilyBinding
  REASONING: FamilyBinding
  MCP: FamilyBinding
  AUTH: FamilyBinding
  TELEMETRY: FamilyBinding
  PLATFORM: FamilyBinding
  /** How long a verified API key stays cached in an isolate (seconds, default 30). */
  API_KEY_CACHE_TTL_SECONDS?: string
  /** Public base URL when the gateway sits behind another proxy (default: the request's origin). */
  PUBLIC_BASE_URL?: string
  /** Comma-separated browser origins allowed by CORS (default `*`). */
  CORS_ALLOWED_ORIGINS?: string
}

export interface GatewayVariables {
  requestId: string
  baseUrl: string
}

export interface GatewayApp {
  Bindings: GatewayEnv
  Variables: GatewayVariables
}
