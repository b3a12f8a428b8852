/**
 * Whether an SMTP failure is worth another attempt. An SMTP reply code says so itself (RFC 5321: 4yz
 * transient, 5yz permanent); no reply at all (refused connection, timeout, a dropped socket, no SMTP
 * server configured) is transient: the server or the setting may come back.
 */
export interface SmtpFailure {
  /** The SMTP reply code, when the server answered. */
  responseCode?: number | undefined;
  message: string;
}

export type SmtpFailureKind = 'transient' | 'permanent';

export function classifySmtpFailure(failure: SmtpFailure): SmtpFailureKind {
  const code = failure.responseCode;
  if (code !== undefined && code >= 500 && code < 600) return 'permanent';
  return 'transient';
}
