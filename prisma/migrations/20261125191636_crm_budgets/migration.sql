-- CreateTable
CREATE TABLE "crm_budgets" (
    "connection_id" INTEGER NOT NULL,
    "hits" DOUBLE PRECISION[] DEFAULT ARRAY[]::DOUBLE PRECISION[],
    "leases" DOUBLE PRECISION[] DEFAULT ARRAY[]::DOUBLE PRECISION[],
    "paused_until" TIMESTAMPTZ(3),
    "pause_reason" TEXT,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "crm_budgets_pkey" PRIMARY KEY ("connection_id")
);

-- AddForeignKey
ALTER TABLE "crm_budgets" ADD CONSTRAINT "crm_budgets_connection_id_fkey" FOREIGN KEY ("connection_id") REFERENCES "connections"("id") ON DELETE CASCADE ON UPDATE CASCADE;
