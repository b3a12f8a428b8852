-- DropIndex
DROP INDEX "blocklist_entries_blocklist_id_pushed_at_idx";

-- AlterTable
ALTER TABLE "blocklists" ADD COLUMN     "pending_count" INTEGER NOT NULL DEFAULT 0,
ADD COLUMN     "synced_count" INTEGER NOT NULL DEFAULT 0;

-- CreateIndex
CREATE INDEX "blocklist_entries_blocklist_id_pushed_at_id_idx" ON "blocklist_entries"("blocklist_id", "pushed_at", "id");

-- The counts of the lists that already have entries.
UPDATE "blocklists" b SET
  "synced_count" = (SELECT count(*) FROM "blocklist_entries" e WHERE e."blocklist_id" = b."id" AND e."pushed_at" IS NOT NULL),
  "pending_count" = (SELECT count(*) FROM "blocklist_entries" e WHERE e."blocklist_id" = b."id" AND e."pushed_at" IS NULL AND e."push_error" IS NULL);
