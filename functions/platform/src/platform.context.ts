import type { DatabaseEnv } from '../../../shared/db/client'

/** Bindings of the platform worker (functions/platform/wrangler.toml). Secret: DATABASE_URL. */
export type PlatformEnv = DatabaseEnv
