-- AlterTable
ALTER TABLE "connections" ADD COLUMN     "crm_rate_limit" JSONB;

-- AlterTable
ALTER TABLE "blocklists" ADD COLUMN     "crm_source" JSONB,
ADD COLUMN     "sequencer_credentials_encrypted" TEXT;
