CREATE TABLE "qpu_provider_connections" (
	"id" uuid PRIMARY KEY NOT NULL,
	"tenant_id" uuid NOT NULL,
	"name" text NOT NULL,
	"kind" text NOT NULL,
	"base_url" text NOT NULL,
	"target" text NOT NULL,
	"credential" text NOT NULL,
	"created_by" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"last_tested_at" timestamp with time zone,
	"last_test_ok" boolean,
	"last_test_error_code" text,
	"last_test_error" text
);
--> statement-breakpoint
ALTER TABLE "qpu_provider_connections" ADD CONSTRAINT "qpu_provider_connections_tenant_id_tenants_id_fk" FOREIGN KEY ("tenant_id") REFERENCES "public"."tenants"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "qpu_provider_connections_name_idx" ON "qpu_provider_connections" USING btree ("tenant_id","name");--> statement-breakpoint
CREATE INDEX "qpu_provider_connections_tenant_idx" ON "qpu_provider_connections" USING btree ("tenant_id","created_at");