ALTER TABLE "usage_ledger" ADD COLUMN "unit" text DEFAULT 'tokens' NOT NULL;--> statement-breakpoint
ALTER TABLE "usage_ledger" ADD COLUMN "quantity" bigint DEFAULT 0 NOT NULL;--> statement-breakpoint
-- Rows written before paid tools were metered are token rows: their quantity is the tokens used.
UPDATE "usage_ledger" SET "quantity" = "prompt_tokens" + "completion_tokens";
