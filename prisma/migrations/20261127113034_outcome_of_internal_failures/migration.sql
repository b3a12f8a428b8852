-- AlterTable
ALTER TABLE "pending_deliveries" ADD COLUMN     "internal_failures" INTEGER NOT NULL DEFAULT 0;

-- AlterTable
ALTER TABLE "webhook_deliveries" ADD COLUMN     "internal_failures" INTEGER NOT NULL DEFAULT 0;

-- AlterTable
ALTER TABLE "bulk_retries" ADD COLUMN     "error" TEXT;
