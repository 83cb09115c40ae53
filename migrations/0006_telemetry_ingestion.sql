CREATE TABLE "observability_tokens" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"tenant_id" uuid NOT NULL,
	"name" text NOT NULL,
	"token_hash" text NOT NULL,
	"suffix" text NOT NULL,
	"created_by" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"rotated_at" timestamp with time zone,
	"last_used_at" timestamp with time zone,
	"revoked_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "telemetry_ingestions" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"tenant_id" uuid NOT NULL,
	"request_id" text NOT NULL,
	"signal" text NOT NULL,
	"encoding" text NOT NULL,
	"content_encoding" text NOT NULL,
	"items" integer NOT NULL,
	"rejected_items" integer DEFAULT 0 NOT NULL,
	"received_bytes" integer NOT NULL,
	"decoded_bytes" integer NOT NULL,
	"outcome" text NOT NULL,
	"status" integer NOT NULL,
	"error_code" text,
	"collector_status" integer,
	"principal" text NOT NULL,
	"duration_ms" integer NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "telemetry_totals" (
	"tenant_id" uuid NOT NULL,
	"signal" text NOT NULL,
	"requests" bigint DEFAULT 0 NOT NULL,
	"forwarded_requests" bigint DEFAULT 0 NOT NULL,
	"failed_requests" bigint DEFAULT 0 NOT NULL,
	"items" bigint DEFAULT 0 NOT NULL,
	"rejected_items" bigint DEFAULT 0 NOT NULL,
	"received_bytes" bigint DEFAULT 0 NOT NULL,
	"decoded_bytes" bigint DEFAULT 0 NOT NULL,
	"last_ingested_at" timestamp with time zone,
	CONSTRAINT "telemetry_totals_tenant_id_signal_pk" PRIMARY KEY("tenant_id","signal")
);
--> statement-breakpoint
ALTER TABLE "observability_tokens" ADD CONSTRAINT "observability_tokens_tenant_id_tenants_id_fk" FOREIGN KEY ("tenant_id") REFERENCES "public"."tenants"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "telemetry_ingestions" ADD CONSTRAINT "telemetry_ingestions_tenant_id_tenants_id_fk" FOREIGN KEY ("tenant_id") REFERENCES "public"."tenants"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "telemetry_totals" ADD CONSTRAINT "telemetry_totals_tenant_id_tenants_id_fk" FOREIGN KEY ("tenant_id") REFERENCES "public"."tenants"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "observability_tokens_hash_idx" ON "observability_tokens" USING btree ("token_hash");--> statement-breakpoint
CREATE INDEX "observability_tokens_tenant_idx" ON "observability_tokens" USING btree ("tenant_id");--> statement-breakpoint
CREATE INDEX "telemetry_ingestions_tenant_time_idx" ON "telemetry_ingestions" USING btree ("tenant_id","created_at");