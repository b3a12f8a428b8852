/** The document the support explorer opens on: the questions support answers most, ready to edit, over the last 7 days. */
export function explorerWelcome(now: Date): string {
  const to = now.toISOString();
  const from = new Date(now.getTime() - 7 * 86_400_000).toISOString();
  return `# Support explorer: you are support staff. Every mutation you run, and every raw body you read, is audited (auditLog).
# Put the customer's account id (or a request id) in the variable defaults below and run an operation, or browse the Docs pane.
# Windows are at most 31 days, like the REST lists'.

# "My events don't reach the CRM": the account's last failed syncs, and its connections' state.
query FailedSyncsOfAnAccount($accountId: Int = 1, $from: String = "${from}", $to: String = "${to}") {
  syncs(accountId: $accountId, from: $from, to: $to, status: error, limit: 20) {
    data { id payloadId createdAt eventType toEmail platform error attempts }
    nextCursor
  }
  account(id: $accountId) {
    id
    email
    connections { id crm status crmPause { until reason } blocklists { id listName status lastError pendingCount } }
  }
}

# One event end to end: what arrived, what the parser made of it, what the CRM got, where it was forwarded.
query LineageOfARequest($requestId: BigInt = 1) {
  request(id: $requestId) {
    id accountId sourceId createdAt contentType
    parsed { ok reason event }
    sync { id status error attempts crmState updatedAt }
    deliveries { id destinationUrl status httpStatus error createdAt replayOfDeliveryId }
    pendingDeliveries { destinationId attempt dueAt }
    relayExecutions { status reason attempts sentAt }
    platformEvents { id type summary created }
  }
}

# After a fix: how many error syncs a re-sync would take (dryRun: false queues them; read bulkRetry(id) for progress).
mutation ResyncAfterAFix($accountId: Int = 1, $from: String = "${from}", $to: String = "${to}") {
  retrySyncs(filter: { accountId: $accountId, from: $from, to: $to }, dryRun: true) { matched capped }
}

query RecentStaffActions {
  auditLog(limit: 20) { createdAt staff action arguments result }
}
`;
}
