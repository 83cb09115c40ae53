CREATE TABLE "reasoning_idempotency_keys" (
	"tenant_id" uuid NOT NULL,
	"key" text NOT NULL,
	"request_hash" text NOT NULL,
	"job_id" uuid NOT NULL,
	"response_status" integer NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "reasoning_idempotency_keys_tenant_id_key_pk" PRIMARY KEY("tenant_id","key")
);
--> statement-breakpoint
CREATE TABLE "reasoning_jobs" (
	"id" uuid PRIMARY KEY NOT NULL,
	"tenant_id" uuid NOT NULL,
	"principal" text NOT NULL,
	"model" text NOT NULL,
	"product" text NOT NULL,
	"status" text NOT NULL,
	"record" jsonb NOT NULL,
	"record_version" integer NOT NULL,
	"created_at" timestamp (3) with time zone NOT NULL,
	"updated_at" timestamp (3) with time zone NOT NULL
);
--> statement-breakpoint
ALTER TABLE "reasoning_idempotency_keys" ADD CONSTRAINT "reasoning_idempotency_keys_tenant_id_tenants_id_fk" FOREIGN KEY ("tenant_id") REFERENCES "public"."tenants"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "reasoning_jobs" ADD CONSTRAINT "reasoning_jobs_tenant_id_tenants_id_fk" FOREIGN KEY ("tenant_id") REFERENCES "public"."tenants"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "reasoning_idempotency_created_idx" ON "reasoning_idempotency_keys" USING btree ("tenant_id","created_at");--> statement-breakpoint
CREATE INDEX "reasoning_jobs_page_idx" ON "reasoning_jobs" USING btree ("tenant_id","created_at" DESC NULLS LAST,"id" DESC NULLS LAST);--> statement-breakpoint
CREATE INDEX "reasoning_jobs_status_idx" ON "reasoning_jobs" USING btree ("tenant_id","status");