-- CreateTable
CREATE TABLE "pending_syncs" (
    "request_id" BIGINT NOT NULL,
    "connection_id" INTEGER NOT NULL,
    "retry" BOOLEAN NOT NULL DEFAULT false,
    "waits" INTEGER NOT NULL DEFAULT 0,
    "due_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "internal_failures" INTEGER NOT NULL DEFAULT 0,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "pending_syncs_pkey" PRIMARY KEY ("request_id")
);

-- CreateIndex
CREATE INDEX "pending_syncs_connection_id_due_at_request_id_idx" ON "pending_syncs"("connection_id", "due_at", "request_id");

-- AddForeignKey
ALTER TABLE "pending_syncs" ADD CONSTRAINT "pending_syncs_request_id_fkey" FOREIGN KEY ("request_id") REFERENCES "requests"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- Syncs waiting as syncs__run jobs (the task this outbox replaces) move here; the worker queues their
-- connections' drains when it starts. Jobs a worker holds now finish where they are.
DO $$
BEGIN
  IF to_regclass('graphile_worker._private_jobs') IS NOT NULL THEN
    INSERT INTO "pending_syncs" ("request_id", "connection_id", "retry", "waits", "due_at")
    SELECT r.id, r.connection_id, coalesce((j.payload->>'retry')::boolean, false), coalesce((j.payload->>'waits')::int, 0), j.run_at
      FROM graphile_worker._private_jobs j
      JOIN graphile_worker._private_tasks t ON t.id = j.task_id
      JOIN "requests" r ON r.id = (j.payload->>'requestId')::bigint
     WHERE t.identifier = 'syncs__run' AND j.locked_at IS NULL AND r.connection_id IS NOT NULL
    ON CONFLICT ("request_id") DO NOTHING;
    DELETE FROM graphile_worker._private_jobs j USING graphile_worker._private_tasks t
     WHERE t.id = j.task_id AND t.identifier = 'syncs__run' AND j.locked_at IS NULL;
  END IF;
END $$;
