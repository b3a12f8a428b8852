-- AlterTable
ALTER TABLE "platform_events" ADD COLUMN     "request_id" BIGINT;

-- CreateTable
CREATE TABLE "bulk_retries" (
    "id" BIGSERIAL NOT NULL,
    "staff" TEXT NOT NULL,
    "filter" JSONB NOT NULL,
    "matched" INTEGER NOT NULL,
    "queued_all_at" TIMESTAMPTZ(3),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "bulk_retries_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "bulk_retry_items" (
    "bulk_retry_id" BIGINT NOT NULL,
    "sync_id" BIGINT NOT NULL,
    "queued_at" TIMESTAMPTZ(3),

    CONSTRAINT "bulk_retry_items_pkey" PRIMARY KEY ("bulk_retry_id","sync_id")
);

-- CreateIndex
CREATE INDEX "bulk_retry_items_sync_id_idx" ON "bulk_retry_items"("sync_id");

-- CreateIndex
CREATE INDEX "platform_events_request_id_idx" ON "platform_events"("request_id");

-- AddForeignKey
ALTER TABLE "platform_events" ADD CONSTRAINT "platform_events_request_id_fkey" FOREIGN KEY ("request_id") REFERENCES "requests"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "bulk_retry_items" ADD CONSTRAINT "bulk_retry_items_bulk_retry_id_fkey" FOREIGN KEY ("bulk_retry_id") REFERENCES "bulk_retries"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "bulk_retry_items" ADD CONSTRAINT "bulk_retry_items_sync_id_fkey" FOREIGN KEY ("sync_id") REFERENCES "syncs"("id") ON DELETE CASCADE ON UPDATE CASCADE;
