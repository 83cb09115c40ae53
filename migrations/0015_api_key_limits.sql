ALTER TABLE "api_keys" ADD COLUMN "allowed_models" text[];--> statement-breakpoint
ALTER TABLE "api_keys" ADD COLUMN "spend_limit_usd" numeric(16, 6);--> statement-breakpoint
ALTER TABLE "api_keys" ADD COLUMN "spend_period" text;--> statement-breakpoint
ALTER TABLE "api_keys" ADD COLUMN "requests_per_minute" integer;--> statement-breakpoint
ALTER TABLE "api_keys" ADD COLUMN "tokens_per_minute" integer;--> statement-breakpoint
CREATE INDEX "usage_ledger_principal_time_idx" ON "usage_ledger" USING btree ("tenant_id","principal","created_at");--> statement-breakpoint
ALTER TABLE "api_keys" ADD CONSTRAINT "api_keys_spend_limit_check" CHECK (("api_keys"."spend_limit_usd" is null) = ("api_keys"."spend_period" is null) and ("api_keys"."spend_limit_usd" is null or "api_keys"."spend_limit_usd" > 0));