-- Test and live are separate worlds (README, "Test and live"): every resource a credential creates
-- carries the mode it was created in. Existing rows get the mode of the key that created them where
-- the row names it, else live (the only mode a person or service account had before).
ALTER TABLE "feedback" ADD COLUMN "mode" text;--> statement-breakpoint
UPDATE "feedback" f SET "mode" = k."mode" FROM "api_keys" k WHERE k."id" = f."api_key_id";--> statement-breakpoint
UPDATE "feedback" SET "mode" = 'live' WHERE "mode" IS NULL;--> statement-breakpoint
ALTER TABLE "feedback" ALTER COLUMN "mode" SET NOT NULL;--> statement-breakpoint
ALTER TABLE "feedback" ADD CONSTRAINT "feedback_mode_check" CHECK ("feedback"."mode" in ('test', 'live'));--> statement-breakpoint
DROP INDEX "feedback_tenant_idx";--> statement-breakpoint
CREATE INDEX "feedback_tenant_idx" ON "feedback" USING btree ("tenant_id","mode","created_at");--> statement-breakpoint
ALTER TABLE "memories" ADD COLUMN "mode" text;--> statement-breakpoint
UPDATE "memories" m SET "mode" = k."mode" FROM "api_keys" k WHERE m."owner_id" = 'key:' || k."id"::text;--> statement-breakpoint
UPDATE "memories" SET "mode" = 'live' WHERE "mode" IS NULL;--> statement-breakpoint
ALTER TABLE "memories" ALTER COLUMN "mode" SET NOT NULL;--> statement-breakpoint
ALTER TABLE "memories" ADD CONSTRAINT "memories_mode_check" CHECK ("memories"."mode" in ('test', 'live'));--> statement-breakpoint
DROP INDEX "memories_owner_idx";--> statement-breakpoint
CREATE INDEX "memories_owner_idx" ON "memories" USING btree ("tenant_id","mode","owner_id","created_at");--> statement-breakpoint
-- Documents do not record who uploaded them: live, and their chunks with them.
ALTER TABLE "documents" ADD COLUMN "mode" text;--> statement-breakpoint
UPDATE "documents" SET "mode" = 'live';--> statement-breakpoint
ALTER TABLE "documents" ALTER COLUMN "mode" SET NOT NULL;--> statement-breakpoint
ALTER TABLE "documents" ADD CONSTRAINT "documents_mode_check" CHECK ("documents"."mode" in ('test', 'live'));--> statement-breakpoint
DROP INDEX "documents_tenant_source_idx";--> statement-breakpoint
DROP INDEX "documents_tenant_created_idx";--> statement-breakpoint
CREATE UNIQUE INDEX "documents_tenant_source_idx" ON "documents" USING btree ("tenant_id","mode","source");--> statement-breakpoint
CREATE INDEX "documents_tenant_created_idx" ON "documents" USING btree ("tenant_id","mode","created_at","id");--> statement-breakpoint
ALTER TABLE "document_chunks" ADD COLUMN "mode" text;--> statement-breakpoint
UPDATE "document_chunks" c SET "mode" = d."mode" FROM "documents" d WHERE d."id" = c."document_id";--> statement-breakpoint
ALTER TABLE "document_chunks" ALTER COLUMN "mode" SET NOT NULL;--> statement-breakpoint
ALTER TABLE "document_chunks" ADD CONSTRAINT "document_chunks_mode_check" CHECK ("document_chunks"."mode" in ('test', 'live'));--> statement-breakpoint
DROP INDEX "document_chunks_tenant_space_idx";--> statement-breakpoint
CREATE INDEX "document_chunks_tenant_space_idx" ON "document_chunks" USING btree ("tenant_id","mode","embedding_space","text_sha256");
--> statement-breakpoint
-- Reasoning jobs: the creating key's mode (the job's object holds the same: test_mode), else live.
ALTER TABLE "reasoning_jobs" ADD COLUMN "mode" text;--> statement-breakpoint
UPDATE "reasoning_jobs" j SET "mode" = k."mode" FROM "api_keys" k WHERE j."principal" = 'key:' || k."id"::text;--> statement-breakpoint
UPDATE "reasoning_jobs" SET "mode" = 'live' WHERE "mode" IS NULL;--> statement-breakpoint
ALTER TABLE "reasoning_jobs" ALTER COLUMN "mode" SET NOT NULL;--> statement-breakpoint
ALTER TABLE "reasoning_jobs" ADD CONSTRAINT "reasoning_jobs_mode_check" CHECK ("reasoning_jobs"."mode" in ('test', 'live'));--> statement-breakpoint
DROP INDEX "reasoning_jobs_page_idx";--> statement-breakpoint
DROP INDEX "reasoning_jobs_status_idx";--> statement-breakpoint
CREATE INDEX "reasoning_jobs_page_idx" ON "reasoning_jobs" USING btree ("tenant_id","mode","created_at" DESC NULLS LAST,"id" DESC NULLS LAST);--> statement-breakpoint
CREATE INDEX "reasoning_jobs_status_idx" ON "reasoning_jobs" USING btree ("tenant_id","mode","status");--> statement-breakpoint
-- Idempotency keys: their job's mode; a key whose job is not indexed yet (kept 24 hours at most) live.
ALTER TABLE "reasoning_idempotency_keys" ADD COLUMN "mode" text;--> statement-breakpoint
UPDATE "reasoning_idempotency_keys" i SET "mode" = j."mode" FROM "reasoning_jobs" j WHERE j."id" = i."job_id";--> statement-breakpoint
UPDATE "reasoning_idempotency_keys" SET "mode" = 'live' WHERE "mode" IS NULL;--> statement-breakpoint
ALTER TABLE "reasoning_idempotency_keys" ALTER COLUMN "mode" SET NOT NULL;--> statement-breakpoint
ALTER TABLE "reasoning_idempotency_keys" ADD CONSTRAINT "reasoning_idempotency_keys_mode_check" CHECK ("reasoning_idempotency_keys"."mode" in ('test', 'live'));--> statement-breakpoint
ALTER TABLE "reasoning_idempotency_keys" DROP CONSTRAINT "reasoning_idempotency_keys_tenant_id_key_pk";--> statement-breakpoint
ALTER TABLE "reasoning_idempotency_keys" ADD CONSTRAINT "reasoning_idempotency_keys_tenant_id_mode_key_pk" PRIMARY KEY("tenant_id","mode","key");--> statement-breakpoint
-- Provider connections: the creating key's mode (created_by names it), else live.
ALTER TABLE "qpu_provider_connections" ADD COLUMN "mode" text;--> statement-breakpoint
UPDATE "qpu_provider_connections" c SET "mode" = k."mode" FROM "api_keys" k WHERE c."created_by" = 'key:' || k."id"::text;--> statement-breakpoint
UPDATE "qpu_provider_connections" SET "mode" = 'live' WHERE "mode" IS NULL;--> statement-breakpoint
ALTER TABLE "qpu_provider_connections" ALTER COLUMN "mode" SET NOT NULL;--> statement-breakpoint
ALTER TABLE "qpu_provider_connections" ADD CONSTRAINT "qpu_provider_connections_mode_check" CHECK ("qpu_provider_connections"."mode" in ('test', 'live'));--> statement-breakpoint
DROP INDEX "qpu_provider_connections_name_idx";--> statement-breakpoint
DROP INDEX "qpu_provider_connections_tenant_idx";--> statement-breakpoint
CREATE UNIQUE INDEX "qpu_provider_connections_name_idx" ON "qpu_provider_connections" USING btree ("tenant_id","mode","name");--> statement-breakpoint
CREATE INDEX "qpu_provider_connections_tenant_idx" ON "qpu_provider_connections" USING btree ("tenant_id","mode","created_at");
--> statement-breakpoint
-- Agent runs: `mode` becomes test or live (from test_mode, which it replaces), the agent mode moves to agent_mode.
ALTER TABLE "agent_runs" RENAME COLUMN "mode" TO "agent_mode";--> statement-breakpoint
ALTER TABLE "agent_runs" ADD COLUMN "mode" text;--> statement-breakpoint
UPDATE "agent_runs" SET "mode" = CASE WHEN "test_mode" THEN 'test' ELSE 'live' END;--> statement-breakpoint
ALTER TABLE "agent_runs" ALTER COLUMN "mode" SET NOT NULL;--> statement-breakpoint
ALTER TABLE "agent_runs" ADD CONSTRAINT "agent_runs_mode_check" CHECK ("agent_runs"."mode" in ('test', 'live'));--> statement-breakpoint
ALTER TABLE "agent_runs" DROP COLUMN "test_mode";--> statement-breakpoint
DROP INDEX "agent_runs_owner_idx";--> statement-breakpoint
DROP INDEX "agent_runs_page_idx";--> statement-breakpoint
DROP INDEX "agent_runs_run_idx";--> statement-breakpoint
CREATE UNIQUE INDEX "agent_runs_owner_idx" ON "agent_runs" USING btree ("tenant_id","mode","principal","run_id");--> statement-breakpoint
CREATE INDEX "agent_runs_page_idx" ON "agent_runs" USING btree ("tenant_id","mode","created_at" DESC NULLS LAST,"id" DESC NULLS LAST);--> statement-breakpoint
CREATE INDEX "agent_runs_run_idx" ON "agent_runs" USING btree ("tenant_id","mode","run_id");
