-- AlterTable
ALTER TABLE "crm_budgets" ADD COLUMN     "limited_since" TIMESTAMPTZ(3),
ADD COLUMN     "limited_until" TIMESTAMPTZ(3),
ADD COLUMN     "warned_for" TIMESTAMPTZ(3);
