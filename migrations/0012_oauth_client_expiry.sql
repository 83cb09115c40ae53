ALTER TABLE "oauth_clients" ADD COLUMN "authorized_at" timestamp with time zone;--> statement-breakpoint
-- Clients that already exchanged a code (they started a refresh family) are authorized: only the
-- ones that never did are expired once registered longer than OAUTH_UNUSED_CLIENT_TTL_SECONDS.
UPDATE "oauth_clients" SET "authorized_at" = "first"."created_at"
FROM (
	SELECT "oauth_client_id", min("created_at") AS "created_at" FROM "refresh_token_families"
	WHERE "oauth_client_id" IS NOT NULL GROUP BY "oauth_client_id"
) AS "first"
WHERE "first"."oauth_client_id" = "oauth_clients"."id";--> statement-breakpoint
CREATE INDEX "oauth_clients_unauthorized_idx" ON "oauth_clients" USING btree ("created_at") WHERE "oauth_clients"."authorized_at" is null;
