-- AlterTable
ALTER TABLE "requests" ADD COLUMN     "content_type" TEXT;

-- CreateTable
CREATE TABLE "pending_deliveries" (
    "id" BIGSERIAL NOT NULL,
    "destination_id" INTEGER NOT NULL,
    "request_id" BIGINT NOT NULL,
    "attempt" INTEGER NOT NULL DEFAULT 1,
    "due_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "replay_of_delivery_id" BIGINT,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "pending_deliveries_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "pending_deliveries_destination_id_due_at_id_idx" ON "pending_deliveries"("destination_id", "due_at", "id");

-- CreateIndex
CREATE INDEX "pending_deliveries_request_id_idx" ON "pending_deliveries"("request_id");

-- CreateIndex
CREATE INDEX "pending_deliveries_replay_of_delivery_id_idx" ON "pending_deliveries"("replay_of_delivery_id");

-- AddForeignKey
ALTER TABLE "pending_deliveries" ADD CONSTRAINT "pending_deliveries_destination_id_fkey" FOREIGN KEY ("destination_id") REFERENCES "destinations"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "pending_deliveries" ADD CONSTRAINT "pending_deliveries_request_id_fkey" FOREIGN KEY ("request_id") REFERENCES "requests"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "pending_deliveries" ADD CONSTRAINT "pending_deliveries_replay_of_delivery_id_fkey" FOREIGN KEY ("replay_of_delivery_id") REFERENCES "deliveries"("id") ON DELETE SET NULL ON UPDATE CASCADE;
