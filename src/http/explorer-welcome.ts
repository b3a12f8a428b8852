/** The document the support explorer opens on: the questions support answers most, ready to edit. */
export const EXPLORER_WELCOME = `# Support explorer: you are support staff; every mutation you run is audited (auditLog).
# Put an account id below and run, or pick an operation from the Docs pane.

query FailedSyncsOfAnAccount {
  account(id: 1) {
    id
    email
    connections {
      id
      crm
      crmPause { until reason }
      blocklists { id listName status isEnabled lastError pendingCount }
    }
  }
}

query RecentStaffActions {
  auditLog(limit: 20) { createdAt staff action arguments result }
}
`;
