import type { DatabaseEnv } from '../../../shared/db/client'

export type KnowledgeEnv = DatabaseEnv
