ALTER TABLE "usage_ledger" ADD COLUMN "status" integer;--> statement-breakpoint
ALTER TABLE "usage_ledger" ADD COLUMN "latency_ms" integer;