-- AlterEnum (RETRYING is folded into PENDING: a delivery waiting for its next attempt)
BEGIN;
UPDATE "webhook_deliveries" SET "status" = 'PENDING' WHERE "status" = 'RETRYING';
CREATE TYPE "webhook_delivery_status_new" AS ENUM ('PENDING', 'SUCCEEDED', 'DEAD');
ALTER TABLE "webhook_deliveries" ALTER COLUMN "status" DROP DEFAULT;
ALTER TABLE "webhook_deliveries" ALTER COLUMN "status" TYPE "webhook_delivery_status_new" USING ("status"::text::"webhook_delivery_status_new");
ALTER TYPE "webhook_delivery_status" RENAME TO "webhook_delivery_status_old";
ALTER TYPE "webhook_delivery_status_new" RENAME TO "webhook_delivery_status";
DROP TYPE "webhook_delivery_status_old";
ALTER TABLE "webhook_deliveries" ALTER COLUMN "status" SET DEFAULT 'PENDING';
COMMIT;

-- AlterTable
ALTER TABLE "webhook_endpoints" ADD COLUMN     "disabled_reason" TEXT;

-- AlterTable
ALTER TABLE "webhook_deliveries" ADD COLUMN     "response_excerpt" TEXT;

-- CreateIndex
CREATE INDEX "webhook_deliveries_endpoint_id_status_next_attempt_at_id_idx" ON "webhook_deliveries"("endpoint_id", "status", "next_attempt_at", "id");
