-- CreateTable
CREATE TABLE "relay_executions" (
    "id" BIGSERIAL NOT NULL,
    "relay_id" INTEGER NOT NULL,
    "request_id" BIGINT NOT NULL,
    "account_id" INTEGER NOT NULL,
    "connection_id" INTEGER NOT NULL,
    "event_key" TEXT,
    "status" TEXT NOT NULL DEFAULT 'scheduled',
    "reason" TEXT,
    "message_id" TEXT NOT NULL,
    "smtp_response" TEXT,
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "attempt_log" JSONB NOT NULL DEFAULT '[]',
    "unknown_placeholders" TEXT[] DEFAULT ARRAY[]::TEXT[],
    "run_at" TIMESTAMPTZ(3) NOT NULL,
    "next_attempt_at" TIMESTAMPTZ(3),
    "sending_since" TIMESTAMPTZ(3),
    "sent_at" TIMESTAMPTZ(3),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "relay_executions_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "relay_executions_request_id_idx" ON "relay_executions"("request_id");

-- CreateIndex
CREATE INDEX "relay_executions_account_id_created_at_idx" ON "relay_executions"("account_id", "created_at" DESC);

-- CreateIndex
CREATE UNIQUE INDEX "relay_executions_relay_id_request_id_key" ON "relay_executions"("relay_id", "request_id");

-- CreateIndex
CREATE UNIQUE INDEX "relay_executions_relay_id_event_key_key" ON "relay_executions"("relay_id", "event_key");

-- AddForeignKey
ALTER TABLE "relay_executions" ADD CONSTRAINT "relay_executions_relay_id_fkey" FOREIGN KEY ("relay_id") REFERENCES "reply_relays"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "relay_executions" ADD CONSTRAINT "relay_executions_request_id_fkey" FOREIGN KEY ("request_id") REFERENCES "requests"("id") ON DELETE CASCADE ON UPDATE CASCADE;
