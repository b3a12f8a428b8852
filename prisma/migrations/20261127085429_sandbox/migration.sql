-- CreateTable
CREATE TABLE "sandbox_requests" (
    "id" BIGSERIAL NOT NULL,
    "system" TEXT NOT NULL,
    "method" TEXT NOT NULL,
    "path" TEXT NOT NULL,
    "headers" JSONB NOT NULL DEFAULT '{}',
    "body" TEXT NOT NULL,
    "status" INTEGER NOT NULL,
    "forced" BOOLEAN NOT NULL DEFAULT false,
    "verified" BOOLEAN,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "sandbox_requests_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "sandbox_faults" (
    "system" TEXT NOT NULL,
    "kind" TEXT NOT NULL,
    "remaining" INTEGER NOT NULL,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "sandbox_faults_pkey" PRIMARY KEY ("system")
);

-- CreateIndex
CREATE INDEX "sandbox_requests_system_id_idx" ON "sandbox_requests"("system", "id");
