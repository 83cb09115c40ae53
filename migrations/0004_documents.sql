CREATE TABLE "document_chunks" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"document_id" uuid NOT NULL,
	"tenant_id" uuid NOT NULL,
	"ordinal" integer NOT NULL,
	"start_offset" integer NOT NULL,
	"end_offset" integer NOT NULL,
	"text" text NOT NULL,
	"text_sha256" text NOT NULL,
	"tsv" "tsvector" GENERATED ALWAYS AS (to_tsvector('english', "text")) STORED NOT NULL,
	"embedding" real[],
	"embedding_space" text,
	"embedding_dimensions" integer
);
--> statement-breakpoint
CREATE TABLE "documents" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"tenant_id" uuid NOT NULL,
	"source" text NOT NULL,
	"content" text NOT NULL,
	"content_sha256" text NOT NULL,
	"size_bytes" integer NOT NULL,
	"characters" integer NOT NULL,
	"chunk_count" integer NOT NULL,
	"embedding_space" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "memories" ADD COLUMN "tsv" "tsvector" GENERATED ALWAYS AS (to_tsvector('english', "content")) STORED NOT NULL;--> statement-breakpoint
ALTER TABLE "document_chunks" ADD CONSTRAINT "document_chunks_document_id_documents_id_fk" FOREIGN KEY ("document_id") REFERENCES "public"."documents"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "document_chunks" ADD CONSTRAINT "document_chunks_tenant_id_tenants_id_fk" FOREIGN KEY ("tenant_id") REFERENCES "public"."tenants"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "documents" ADD CONSTRAINT "documents_tenant_id_tenants_id_fk" FOREIGN KEY ("tenant_id") REFERENCES "public"."tenants"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "document_chunks_document_idx" ON "document_chunks" USING btree ("document_id","ordinal");--> statement-breakpoint
CREATE INDEX "document_chunks_tenant_space_idx" ON "document_chunks" USING btree ("tenant_id","embedding_space","text_sha256");--> statement-breakpoint
CREATE INDEX "document_chunks_tsv_idx" ON "document_chunks" USING gin ("tsv");--> statement-breakpoint
CREATE UNIQUE INDEX "documents_tenant_source_idx" ON "documents" USING btree ("tenant_id","source");--> statement-breakpoint
CREATE INDEX "documents_tenant_created_idx" ON "documents" USING btree ("tenant_id","created_at","id");--> statement-breakpoint
CREATE INDEX "memories_tsv_idx" ON "memories" USING gin ("tsv");--> statement-breakpoint
-- pgvector where the server offers it (Neon, the embedded PGlite): HNSW indexes on the unit-length
-- embeddings (inner product = cosine) for the dimensions of the documented embedding models, each
-- partial on its dimension. A server without pgvector (or a role that may not install it) applies
-- this migration all the same; retrieval then ranks vectors by an exact scan (docs/retrieval.md).
DO $$
DECLARE dims integer;
BEGIN
  IF EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'vector') THEN
    CREATE EXTENSION IF NOT EXISTS vector;
    FOREACH dims IN ARRAY ARRAY[256, 384, 512, 768, 1024, 1536] LOOP
      EXECUTE format(
        'CREATE INDEX IF NOT EXISTS document_chunks_embedding_%s_idx ON document_chunks USING hnsw ((embedding::vector(%s)) vector_ip_ops) WHERE embedding_dimensions = %s',
        dims, dims, dims);
    END LOOP;
  END IF;
EXCEPTION WHEN insufficient_privilege THEN
  RAISE NOTICE 'pgvector is available but this role may not install it: vectors are ranked by an exact scan';
END $$;
