-- CreateTable
CREATE TABLE "connect_states" (
    "nonce" TEXT NOT NULL,
    "connection_id" INTEGER NOT NULL,
    "expires_at" TIMESTAMPTZ(3) NOT NULL,
    "used_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "connect_states_pkey" PRIMARY KEY ("nonce")
);

-- CreateIndex
CREATE INDEX "connect_states_expires_at_idx" ON "connect_states"("expires_at");
