-- CreateIndex
CREATE INDEX "lead_category_signals_created_at_idx" ON "lead_category_signals"("created_at");
