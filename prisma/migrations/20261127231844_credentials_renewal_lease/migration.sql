-- AlterTable
ALTER TABLE "connections" ADD COLUMN     "credentials_renewal_holder" TEXT,
ADD COLUMN     "credentials_renewal_until" TIMESTAMPTZ(3);
