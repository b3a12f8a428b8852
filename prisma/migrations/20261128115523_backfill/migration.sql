-- AlterTable
ALTER TABLE "sources" ADD COLUMN     "sequencer_credentials_encrypted" TEXT;

-- AlterTable
ALTER TABLE "requests" ADD COLUMN     "duplicate_of" BIGINT,
ADD COLUMN     "fetched" BOOLEAN NOT NULL DEFAULT false;

-- A move of requests onto partitions still under way (src/db/history/convert.ts) swaps its twin in for the
-- table: the twin gains the columns too (its trigger fills them with their defaults until the swap).
DO $$
BEGIN
  IF to_regclass('requests__partitioned') IS NOT NULL THEN
    ALTER TABLE "requests__partitioned" ADD COLUMN "duplicate_of" BIGINT, ADD COLUMN "fetched" BOOLEAN NOT NULL DEFAULT false;
  END IF;
END $$;

-- CreateTable
CREATE TABLE "source_backfills" (
    "source_id" INTEGER NOT NULL,
    "paused" BOOLEAN NOT NULL DEFAULT false,
    "since" TIMESTAMPTZ(3),
    "last_round_started_at" TIMESTAMPTZ(3),
    "last_round_at" TIMESTAMPTZ(3),
    "rounds" INTEGER NOT NULL DEFAULT 0,
    "messages_seen" BIGINT NOT NULL DEFAULT 0,
    "events_synthesised" BIGINT NOT NULL DEFAULT 0,
    "last_error" TEXT,
    "failures" INTEGER NOT NULL DEFAULT 0,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "source_backfills_pkey" PRIMARY KEY ("source_id")
);

-- CreateTable
CREATE TABLE "source_leads" (
    "source_id" INTEGER NOT NULL,
    "lead_key" TEXT NOT NULL,
    "campaign_id" TEXT,
    "lead_id" TEXT,
    "contact" TEXT NOT NULL,
    "last_seen_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "source_leads_pkey" PRIMARY KEY ("source_id","lead_key")
);

-- CreateTable
CREATE TABLE "message_keys" (
    "source_id" INTEGER NOT NULL,
    "key" TEXT NOT NULL,
    "request_id" BIGINT NOT NULL,
    "fetched" BOOLEAN NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "message_keys_pkey" PRIMARY KEY ("source_id","key")
);

-- CreateTable
CREATE TABLE "sequencer_budgets" (
    "account" TEXT NOT NULL,
    "hits" DOUBLE PRECISION[] DEFAULT ARRAY[]::DOUBLE PRECISION[],
    "paused_until" TIMESTAMPTZ(3),
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "sequencer_budgets_pkey" PRIMARY KEY ("account")
);

-- CreateIndex
CREATE INDEX "source_leads_source_id_last_seen_at_idx" ON "source_leads"("source_id", "last_seen_at");

-- CreateIndex
CREATE INDEX "message_keys_created_at_idx" ON "message_keys"("created_at");

-- AddForeignKey
ALTER TABLE "source_backfills" ADD CONSTRAINT "source_backfills_source_id_fkey" FOREIGN KEY ("source_id") REFERENCES "sources"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "source_leads" ADD CONSTRAINT "source_leads_source_id_fkey" FOREIGN KEY ("source_id") REFERENCES "sources"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "message_keys" ADD CONSTRAINT "message_keys_source_id_fkey" FOREIGN KEY ("source_id") REFERENCES "sources"("id") ON DELETE CASCADE ON UPDATE CASCADE;
