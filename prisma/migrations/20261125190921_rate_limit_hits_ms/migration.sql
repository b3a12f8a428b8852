-- The counters are per-second logs of the last minute: dropped rather than converted.
DELETE FROM "rate_limit_logs";

-- AlterTable
ALTER TABLE "rate_limit_logs" DROP COLUMN "counts",
DROP COLUMN "seconds",
ADD COLUMN     "hits" BIGINT[];
