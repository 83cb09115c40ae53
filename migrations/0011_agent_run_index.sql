CREATE TABLE "agent_runs" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"tenant_id" uuid NOT NULL,
	"run_id" uuid NOT NULL,
	"principal" text NOT NULL,
	"api_key_id" uuid,
	"user_id" uuid,
	"test_mode" boolean NOT NULL,
	"mode" text NOT NULL,
	"model" text NOT NULL,
	"state" text NOT NULL,
	"turn_count" integer NOT NULL,
	"input_tokens" bigint NOT NULL,
	"output_tokens" bigint NOT NULL,
	"total_tokens" bigint NOT NULL,
	"cost_usd" numeric(14, 6) NOT NULL,
	"version" integer NOT NULL,
	"created_at" timestamp (3) with time zone NOT NULL,
	"updated_at" timestamp (3) with time zone NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX "agent_runs_owner_idx" ON "agent_runs" USING btree ("tenant_id","principal","run_id");--> statement-breakpoint
CREATE INDEX "agent_runs_page_idx" ON "agent_runs" USING btree ("tenant_id","created_at" DESC NULLS LAST,"id" DESC NULLS LAST);--> statement-breakpoint
CREATE INDEX "agent_runs_run_idx" ON "agent_runs" USING btree ("tenant_id","run_id");