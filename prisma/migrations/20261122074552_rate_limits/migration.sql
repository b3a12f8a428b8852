-- CreateTable
CREATE TABLE "rate_limit_windows" (
    "bucket" TEXT NOT NULL,
    "window_start" TIMESTAMPTZ(3) NOT NULL,
    "hits" INTEGER NOT NULL,

    CONSTRAINT "rate_limit_windows_pkey" PRIMARY KEY ("bucket")
);

-- CreateTable
CREATE TABLE "rate_limit_logs" (
    "bucket" TEXT NOT NULL,
    "seconds" BIGINT[],
    "counts" INTEGER[],
    "updated_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "rate_limit_logs_pkey" PRIMARY KEY ("bucket")
);

-- CreateIndex
CREATE INDEX "deliveries_account_id_to_email_idx" ON "deliveries"("account_id", "to_email");
