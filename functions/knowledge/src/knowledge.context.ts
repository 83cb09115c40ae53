import type { DatabaseEnv } from '../../../shared/db/client'
import type { PlanCatalogEnv } from '../../../shared/plans/plan-catalog'
import type { EmbeddingsEnv } from './retrieval/embeddings'

export type KnowledgeEnv = DatabaseEnv & PlanCatalogEnv & EmbeddingsEnv
