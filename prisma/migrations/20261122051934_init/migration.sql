-- CreateSchema
CREATE SCHEMA IF NOT EXISTS "public";

-- CreateEnum
CREATE TYPE "connection_scope" AS ENUM ('account', 'connection');

-- CreateEnum
CREATE TYPE "connection_status" AS ENUM ('ready', 'disconnected');

-- CreateEnum
CREATE TYPE "block_type" AS ENUM ('ADDRESS', 'DOMAIN');

-- CreateEnum
CREATE TYPE "blocklist_status" AS ENUM ('CREATED', 'FETCHING', 'SYNCING', 'SYNCED', 'SYNCING_NEW_CONTACTS');

-- CreateEnum
CREATE TYPE "sync_status" AS ENUM ('success', 'warning', 'error');

-- CreateEnum
CREATE TYPE "delivery_status" AS ENUM ('success', 'error');

-- CreateEnum
CREATE TYPE "webhook_delivery_status" AS ENUM ('PENDING', 'RETRYING', 'SUCCEEDED', 'DEAD');

-- CreateEnum
CREATE TYPE "pipeline_state" AS ENUM ('healthy', 'failing');

-- CreateTable
CREATE TABLE "accounts" (
    "id" SERIAL NOT NULL,
    "email" TEXT,
    "can_use_api" BOOLEAN NOT NULL DEFAULT true,
    "can_user_account" BOOLEAN NOT NULL DEFAULT true,
    "can_block_list" BOOLEAN NOT NULL DEFAULT true,
    "can_use_webhooks" BOOLEAN NOT NULL DEFAULT true,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "accounts_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "api_keys" (
    "id" SERIAL NOT NULL,
    "account_id" INTEGER NOT NULL,
    "name" TEXT NOT NULL,
    "key_hash" TEXT NOT NULL,
    "key_prefix" TEXT NOT NULL,
    "scopes" TEXT[] DEFAULT ARRAY['read']::TEXT[],
    "connection_scope" "connection_scope" NOT NULL DEFAULT 'account',
    "connection_id" INTEGER,
    "revoked_at" TIMESTAMPTZ(3),
    "rotated_at" TIMESTAMPTZ(3),
    "replaced_by_id" INTEGER,
    "last_used_at" TIMESTAMPTZ(3),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "api_keys_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "connections" (
    "id" SERIAL NOT NULL,
    "account_id" INTEGER NOT NULL,
    "crm" TEXT NOT NULL,
    "status" "connection_status" NOT NULL DEFAULT 'ready',
    "organization_id" TEXT,
    "organization_domain" TEXT,
    "api_enabled" BOOLEAN NOT NULL DEFAULT true,
    "sync_enabled" BOOLEAN NOT NULL DEFAULT true,
    "credentials_encrypted" TEXT,
    "token_expires_at" TIMESTAMPTZ(3),
    "deleted_at" TIMESTAMPTZ(3),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "connections_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "sources" (
    "id" SERIAL NOT NULL,
    "connection_id" INTEGER NOT NULL,
    "platform" TEXT NOT NULL,
    "ingress_code" TEXT NOT NULL,
    "legacy_id_1" TEXT,
    "legacy_id_2" TEXT,
    "create_or_update_company" BOOLEAN NOT NULL DEFAULT false,
    "create_or_update_task" BOOLEAN NOT NULL DEFAULT false,
    "assign_contact_owner" BOOLEAN NOT NULL DEFAULT false,
    "crm_object_type" TEXT,
    "reply_relay_id" INTEGER,
    "last_event_received_at" TIMESTAMPTZ(3),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "sources_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "destinations" (
    "id" SERIAL NOT NULL,
    "connection_id" INTEGER NOT NULL,
    "url" TEXT NOT NULL,
    "description" TEXT NOT NULL DEFAULT '',
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "destinations_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "destination_bindings" (
    "id" SERIAL NOT NULL,
    "source_id" INTEGER NOT NULL,
    "destination_id" INTEGER NOT NULL,
    "event_types" TEXT[] DEFAULT ARRAY[]::TEXT[],
    "is_delayed" BOOLEAN NOT NULL DEFAULT false,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "destination_bindings_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "reply_relays" (
    "id" SERIAL NOT NULL,
    "connection_id" INTEGER NOT NULL,
    "description" TEXT NOT NULL DEFAULT '',
    "cc_email" TEXT NOT NULL,
    "delay_minutes" INTEGER NOT NULL DEFAULT 0,
    "body_templates" TEXT[] DEFAULT ARRAY[]::TEXT[],
    "category_allowlist" JSONB NOT NULL DEFAULT '[]',
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "reply_relays_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "blocklists" (
    "id" SERIAL NOT NULL,
    "connection_id" INTEGER NOT NULL,
    "list_name" TEXT NOT NULL,
    "platform" TEXT NOT NULL,
    "block_type" "block_type" NOT NULL,
    "status" "blocklist_status" NOT NULL DEFAULT 'CREATED',
    "is_enabled" BOOLEAN NOT NULL DEFAULT true,
    "has_crm_source" BOOLEAN NOT NULL DEFAULT true,
    "client_id" TEXT,
    "last_fetched_at" TIMESTAMPTZ(3),
    "last_error" TEXT,
    "last_attempted_at" TIMESTAMPTZ(3),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "blocklists_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "blocklist_entries" (
    "id" BIGSERIAL NOT NULL,
    "blocklist_id" INTEGER NOT NULL,
    "value" TEXT NOT NULL,
    "pushed_at" TIMESTAMPTZ(3),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "blocklist_entries_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "requests" (
    "id" BIGSERIAL NOT NULL,
    "account_id" INTEGER NOT NULL,
    "source_id" INTEGER,
    "connection_id" INTEGER,
    "path" TEXT NOT NULL,
    "body" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "requests_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "syncs" (
    "id" BIGSERIAL NOT NULL,
    "account_id" INTEGER NOT NULL,
    "connection_id" INTEGER NOT NULL,
    "source_id" INTEGER NOT NULL,
    "request_id" BIGINT NOT NULL,
    "platform" TEXT NOT NULL,
    "status" "sync_status",
    "event_type" TEXT NOT NULL,
    "to_email" TEXT NOT NULL,
    "error" JSONB,
    "crm_state" JSONB NOT NULL DEFAULT '{}',
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "syncs_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "deliveries" (
    "id" BIGSERIAL NOT NULL,
    "account_id" INTEGER NOT NULL,
    "destination_id" INTEGER NOT NULL,
    "destination_url" TEXT NOT NULL,
    "connection_id" INTEGER NOT NULL,
    "source_id" INTEGER NOT NULL,
    "request_id" BIGINT NOT NULL,
    "event_type" TEXT NOT NULL,
    "to_email" TEXT NOT NULL,
    "status" "delivery_status" NOT NULL,
    "http_status" INTEGER,
    "error" JSONB,
    "replay_of_delivery_id" BIGINT,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "deliveries_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "webhook_endpoints" (
    "id" SERIAL NOT NULL,
    "public_id" TEXT NOT NULL,
    "account_id" INTEGER NOT NULL,
    "url" TEXT NOT NULL,
    "description" TEXT NOT NULL DEFAULT '',
    "enabled_events" TEXT[] DEFAULT ARRAY[]::TEXT[],
    "is_active" BOOLEAN NOT NULL DEFAULT true,
    "secret_encrypted" TEXT NOT NULL,
    "previous_secret_encrypted" TEXT,
    "previous_secret_expires_at" TIMESTAMPTZ(3),
    "consecutive_dead_count" INTEGER NOT NULL DEFAULT 0,
    "disabled_at" TIMESTAMPTZ(3),
    "deleted_at" TIMESTAMPTZ(3),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "webhook_endpoints_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "platform_events" (
    "id" BIGSERIAL NOT NULL,
    "public_id" TEXT NOT NULL,
    "account_id" INTEGER NOT NULL,
    "type" TEXT NOT NULL,
    "summary" TEXT NOT NULL,
    "data" JSONB NOT NULL,
    "connection_id" INTEGER,
    "source_id" INTEGER,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "platform_events_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "webhook_deliveries" (
    "id" BIGSERIAL NOT NULL,
    "public_id" TEXT NOT NULL,
    "endpoint_id" INTEGER NOT NULL,
    "event_id" BIGINT NOT NULL,
    "status" "webhook_delivery_status" NOT NULL DEFAULT 'PENDING',
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "next_attempt_at" TIMESTAMPTZ(3),
    "last_attempt_at" TIMESTAMPTZ(3),
    "last_http_status" INTEGER,
    "last_error" TEXT,
    "replay_of_delivery_id" BIGINT,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "webhook_deliveries_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "pipeline_health" (
    "id" SERIAL NOT NULL,
    "source_id" INTEGER NOT NULL,
    "connection_id" INTEGER NOT NULL,
    "state" "pipeline_state" NOT NULL DEFAULT 'healthy',
    "consecutive_errors" INTEGER NOT NULL DEFAULT 0,
    "last_reason" TEXT,
    "last_error_at" TIMESTAMPTZ(3),
    "last_success_at" TIMESTAMPTZ(3),
    "changed_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "pipeline_health_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "lead_category_signals" (
    "id" BIGSERIAL NOT NULL,
    "account_id" INTEGER NOT NULL,
    "connection_id" INTEGER NOT NULL,
    "source_id" INTEGER NOT NULL,
    "request_id" BIGINT,
    "platform" TEXT NOT NULL,
    "contact" TEXT NOT NULL,
    "category_id" TEXT,
    "category_name" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "lead_category_signals_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "api_keys_key_hash_key" ON "api_keys"("key_hash");

-- CreateIndex
CREATE INDEX "api_keys_account_id_idx" ON "api_keys"("account_id");

-- CreateIndex
CREATE INDEX "api_keys_connection_id_idx" ON "api_keys"("connection_id");

-- CreateIndex
CREATE INDEX "api_keys_replaced_by_id_idx" ON "api_keys"("replaced_by_id");

-- CreateIndex
CREATE INDEX "connections_account_id_id_idx" ON "connections"("account_id", "id");

-- CreateIndex
CREATE UNIQUE INDEX "sources_ingress_code_key" ON "sources"("ingress_code");

-- CreateIndex
CREATE INDEX "sources_connection_id_id_idx" ON "sources"("connection_id", "id");

-- CreateIndex
CREATE INDEX "sources_reply_relay_id_idx" ON "sources"("reply_relay_id");

-- CreateIndex
CREATE UNIQUE INDEX "sources_legacy_id_1_legacy_id_2_key" ON "sources"("legacy_id_1", "legacy_id_2");

-- CreateIndex
CREATE INDEX "destinations_connection_id_id_idx" ON "destinations"("connection_id", "id");

-- CreateIndex
CREATE INDEX "destination_bindings_destination_id_idx" ON "destination_bindings"("destination_id");

-- CreateIndex
CREATE UNIQUE INDEX "destination_bindings_source_id_destination_id_key" ON "destination_bindings"("source_id", "destination_id");

-- CreateIndex
CREATE INDEX "reply_relays_connection_id_id_idx" ON "reply_relays"("connection_id", "id");

-- CreateIndex
CREATE INDEX "blocklists_connection_id_id_idx" ON "blocklists"("connection_id", "id");

-- CreateIndex
CREATE INDEX "blocklist_entries_blocklist_id_pushed_at_idx" ON "blocklist_entries"("blocklist_id", "pushed_at");

-- CreateIndex
CREATE UNIQUE INDEX "blocklist_entries_blocklist_id_value_key" ON "blocklist_entries"("blocklist_id", "value");

-- CreateIndex
CREATE INDEX "requests_account_id_created_at_id_idx" ON "requests"("account_id", "created_at" DESC, "id" DESC);

-- CreateIndex
CREATE INDEX "requests_connection_id_created_at_id_idx" ON "requests"("connection_id", "created_at" DESC, "id" DESC);

-- CreateIndex
CREATE INDEX "requests_source_id_created_at_id_idx" ON "requests"("source_id", "created_at" DESC, "id" DESC);

-- CreateIndex
CREATE UNIQUE INDEX "syncs_request_id_key" ON "syncs"("request_id");

-- CreateIndex
CREATE INDEX "syncs_account_id_created_at_id_status_idx" ON "syncs"("account_id", "created_at" DESC, "id" DESC, "status");

-- CreateIndex
CREATE INDEX "syncs_connection_id_created_at_id_status_idx" ON "syncs"("connection_id", "created_at" DESC, "id" DESC, "status");

-- CreateIndex
CREATE INDEX "syncs_source_id_created_at_id_status_idx" ON "syncs"("source_id", "created_at" DESC, "id" DESC, "status");

-- CreateIndex
CREATE INDEX "syncs_account_id_to_email_idx" ON "syncs"("account_id", "to_email");

-- CreateIndex
CREATE INDEX "deliveries_account_id_created_at_id_status_idx" ON "deliveries"("account_id", "created_at" DESC, "id" DESC, "status");

-- CreateIndex
CREATE INDEX "deliveries_connection_id_created_at_id_status_idx" ON "deliveries"("connection_id", "created_at" DESC, "id" DESC, "status");

-- CreateIndex
CREATE INDEX "deliveries_destination_id_created_at_id_status_idx" ON "deliveries"("destination_id", "created_at" DESC, "id" DESC, "status");

-- CreateIndex
CREATE INDEX "deliveries_source_id_created_at_id_status_idx" ON "deliveries"("source_id", "created_at" DESC, "id" DESC, "status");

-- CreateIndex
CREATE INDEX "deliveries_request_id_idx" ON "deliveries"("request_id");

-- CreateIndex
CREATE INDEX "deliveries_replay_of_delivery_id_idx" ON "deliveries"("replay_of_delivery_id");

-- CreateIndex
CREATE UNIQUE INDEX "webhook_endpoints_public_id_key" ON "webhook_endpoints"("public_id");

-- CreateIndex
CREATE INDEX "webhook_endpoints_account_id_id_idx" ON "webhook_endpoints"("account_id", "id");

-- CreateIndex
CREATE UNIQUE INDEX "platform_events_public_id_key" ON "platform_events"("public_id");

-- CreateIndex
CREATE INDEX "platform_events_account_id_created_at_id_idx" ON "platform_events"("account_id", "created_at" DESC, "id" DESC);

-- CreateIndex
CREATE INDEX "platform_events_connection_id_idx" ON "platform_events"("connection_id");

-- CreateIndex
CREATE INDEX "platform_events_source_id_idx" ON "platform_events"("source_id");

-- CreateIndex
CREATE UNIQUE INDEX "webhook_deliveries_public_id_key" ON "webhook_deliveries"("public_id");

-- CreateIndex
CREATE INDEX "webhook_deliveries_endpoint_id_created_at_id_idx" ON "webhook_deliveries"("endpoint_id", "created_at" DESC, "id" DESC);

-- CreateIndex
CREATE INDEX "webhook_deliveries_event_id_idx" ON "webhook_deliveries"("event_id");

-- CreateIndex
CREATE INDEX "webhook_deliveries_replay_of_delivery_id_idx" ON "webhook_deliveries"("replay_of_delivery_id");

-- CreateIndex
CREATE INDEX "pipeline_health_connection_id_idx" ON "pipeline_health"("connection_id");

-- CreateIndex
CREATE UNIQUE INDEX "pipeline_health_source_id_connection_id_key" ON "pipeline_health"("source_id", "connection_id");

-- CreateIndex
CREATE INDEX "lead_category_signals_account_id_contact_created_at_idx" ON "lead_category_signals"("account_id", "contact", "created_at" DESC);

-- CreateIndex
CREATE INDEX "lead_category_signals_connection_id_contact_created_at_idx" ON "lead_category_signals"("connection_id", "contact", "created_at" DESC);

-- CreateIndex
CREATE INDEX "lead_category_signals_source_id_idx" ON "lead_category_signals"("source_id");

-- CreateIndex
CREATE INDEX "lead_category_signals_request_id_idx" ON "lead_category_signals"("request_id");

-- AddForeignKey
ALTER TABLE "api_keys" ADD CONSTRAINT "api_keys_account_id_fkey" FOREIGN KEY ("account_id") REFERENCES "accounts"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "api_keys" ADD CONSTRAINT "api_keys_connection_id_fkey" FOREIGN KEY ("connection_id") REFERENCES "connections"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "api_keys" ADD CONSTRAINT "api_keys_replaced_by_id_fkey" FOREIGN KEY ("replaced_by_id") REFERENCES "api_keys"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "connections" ADD CONSTRAINT "connections_account_id_fkey" FOREIGN KEY ("account_id") REFERENCES "accounts"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "sources" ADD CONSTRAINT "sources_connection_id_fkey" FOREIGN KEY ("connection_id") REFERENCES "connections"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "sources" ADD CONSTRAINT "sources_reply_relay_id_fkey" FOREIGN KEY ("reply_relay_id") REFERENCES "reply_relays"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "destinations" ADD CONSTRAINT "destinations_connection_id_fkey" FOREIGN KEY ("connection_id") REFERENCES "connections"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "destination_bindings" ADD CONSTRAINT "destination_bindings_source_id_fkey" FOREIGN KEY ("source_id") REFERENCES "sources"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "destination_bindings" ADD CONSTRAINT "destination_bindings_destination_id_fkey" FOREIGN KEY ("destination_id") REFERENCES "destinations"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "reply_relays" ADD CONSTRAINT "reply_relays_connection_id_fkey" FOREIGN KEY ("connection_id") REFERENCES "connections"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "blocklists" ADD CONSTRAINT "blocklists_connection_id_fkey" FOREIGN KEY ("connection_id") REFERENCES "connections"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "blocklist_entries" ADD CONSTRAINT "blocklist_entries_blocklist_id_fkey" FOREIGN KEY ("blocklist_id") REFERENCES "blocklists"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "requests" ADD CONSTRAINT "requests_account_id_fkey" FOREIGN KEY ("account_id") REFERENCES "accounts"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "requests" ADD CONSTRAINT "requests_source_id_fkey" FOREIGN KEY ("source_id") REFERENCES "sources"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "requests" ADD CONSTRAINT "requests_connection_id_fkey" FOREIGN KEY ("connection_id") REFERENCES "connections"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "syncs" ADD CONSTRAINT "syncs_account_id_fkey" FOREIGN KEY ("account_id") REFERENCES "accounts"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "syncs" ADD CONSTRAINT "syncs_connection_id_fkey" FOREIGN KEY ("connection_id") REFERENCES "connections"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "syncs" ADD CONSTRAINT "syncs_source_id_fkey" FOREIGN KEY ("source_id") REFERENCES "sources"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "syncs" ADD CONSTRAINT "syncs_request_id_fkey" FOREIGN KEY ("request_id") REFERENCES "requests"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "deliveries" ADD CONSTRAINT "deliveries_account_id_fkey" FOREIGN KEY ("account_id") REFERENCES "accounts"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "deliveries" ADD CONSTRAINT "deliveries_destination_id_fkey" FOREIGN KEY ("destination_id") REFERENCES "destinations"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "deliveries" ADD CONSTRAINT "deliveries_connection_id_fkey" FOREIGN KEY ("connection_id") REFERENCES "connections"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "deliveries" ADD CONSTRAINT "deliveries_source_id_fkey" FOREIGN KEY ("source_id") REFERENCES "sources"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "deliveries" ADD CONSTRAINT "deliveries_request_id_fkey" FOREIGN KEY ("request_id") REFERENCES "requests"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "deliveries" ADD CONSTRAINT "deliveries_replay_of_delivery_id_fkey" FOREIGN KEY ("replay_of_delivery_id") REFERENCES "deliveries"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "webhook_endpoints" ADD CONSTRAINT "webhook_endpoints_account_id_fkey" FOREIGN KEY ("account_id") REFERENCES "accounts"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "platform_events" ADD CONSTRAINT "platform_events_account_id_fkey" FOREIGN KEY ("account_id") REFERENCES "accounts"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "platform_events" ADD CONSTRAINT "platform_events_connection_id_fkey" FOREIGN KEY ("connection_id") REFERENCES "connections"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "platform_events" ADD CONSTRAINT "platform_events_source_id_fkey" FOREIGN KEY ("source_id") REFERENCES "sources"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "webhook_deliveries" ADD CONSTRAINT "webhook_deliveries_endpoint_id_fkey" FOREIGN KEY ("endpoint_id") REFERENCES "webhook_endpoints"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "webhook_deliveries" ADD CONSTRAINT "webhook_deliveries_event_id_fkey" FOREIGN KEY ("event_id") REFERENCES "platform_events"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "webhook_deliveries" ADD CONSTRAINT "webhook_deliveries_replay_of_delivery_id_fkey" FOREIGN KEY ("replay_of_delivery_id") REFERENCES "webhook_deliveries"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "pipeline_health" ADD CONSTRAINT "pipeline_health_source_id_fkey" FOREIGN KEY ("source_id") REFERENCES "sources"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "pipeline_health" ADD CONSTRAINT "pipeline_health_connection_id_fkey" FOREIGN KEY ("connection_id") REFERENCES "connections"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "lead_category_signals" ADD CONSTRAINT "lead_category_signals_account_id_fkey" FOREIGN KEY ("account_id") REFERENCES "accounts"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "lead_category_signals" ADD CONSTRAINT "lead_category_signals_connection_id_fkey" FOREIGN KEY ("connection_id") REFERENCES "connections"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "lead_category_signals" ADD CONSTRAINT "lead_category_signals_source_id_fkey" FOREIGN KEY ("source_id") REFERENCES "sources"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "lead_category_signals" ADD CONSTRAINT "lead_category_signals_request_id_fkey" FOREIGN KEY ("request_id") REFERENCES "requests"("id") ON DELETE SET NULL ON UPDATE CASCADE;
