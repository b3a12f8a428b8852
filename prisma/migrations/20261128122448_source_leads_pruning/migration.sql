-- CreateIndex
CREATE INDEX "source_leads_last_seen_at_idx" ON "source_leads"("last_seen_at");
