-- AlterTable
ALTER TABLE "blocklist_entries" ADD COLUMN     "push_error" TEXT;
