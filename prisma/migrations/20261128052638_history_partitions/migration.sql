-- AlterTable: bodies of requests received from now on go to request_bodies; the history partitioning
-- (src/db/history/) moves these, in batches, while the service runs. A change of the catalog only.
ALTER TABLE "requests" ALTER COLUMN "body" DROP NOT NULL;

-- CreateTable
CREATE TABLE "request_bodies" (
    "request_id" BIGINT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL,
    "body" TEXT NOT NULL,

    CONSTRAINT "request_bodies_pkey" PRIMARY KEY ("request_id","created_at")
);

-- CreateTable
CREATE TABLE "history_conversions" (
    "table_name" TEXT NOT NULL,
    "copied_through" BIGINT NOT NULL DEFAULT 0,
    "copy_until" BIGINT NOT NULL,
    "started_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "history_conversions_pkey" PRIMARY KEY ("table_name")
);

-- CreateTable
CREATE TABLE "history_holds" (
    "partition" TEXT NOT NULL,
    "table_name" TEXT NOT NULL,
    "reason" TEXT NOT NULL,
    "checked_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "history_holds_pkey" PRIMARY KEY ("partition")
);
