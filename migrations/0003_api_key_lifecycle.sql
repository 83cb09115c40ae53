ALTER TABLE "api_keys" ADD COLUMN "created_by_actor" text;--> statement-breakpoint
ALTER TABLE "api_keys" ADD COLUMN "expires_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "api_keys" ADD COLUMN "replaced_by" uuid;--> statement-breakpoint
-- Keys made before the API existed were created by their workspace's user (the seed's owner).
UPDATE "api_keys" SET "created_by_actor" = 'user:' || "created_by" WHERE "created_by" IS NOT NULL;
