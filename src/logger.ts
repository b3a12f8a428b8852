import { pino, type Logger } from 'pino';
import type { LogLevel } from './config.js';

export type { Logger };

/**
 * The service's logger: JSON lines on stdout, pretty-printed when stdout is a terminal.
 * Secrets never reach a log line: these paths are censored wherever they appear.
 */
export function createLogger(level: LogLevel, destination?: NodeJS.WritableStream): Logger {
  const options = {
    level,
    redact: {
      paths: REDACTED_PATHS,
      censor: '[redacted]',
    },
  };
  if (destination) return pino(options, destination as pino.DestinationStream);
  if (process.stdout.isTTY) {
    return pino({ ...options, transport: { target: 'pino-pretty', options: { colorize: true, ignore: 'pid,hostname' } } });
  }
  return pino(options);
}

const REDACTED_PATHS = [
  'authorization',
  'headers.authorization',
  'req.headers.authorization',
  'req.headers.cookie',
  '*.password',
  '*.secret',
  '*.accessToken',
  '*.refreshToken',
  '*.credentials',
  'credentials',
  '*.apiKey',
  '*.keyHash',
  '*.databaseUrl',
  '*.encryptionKey',
  '*.supportTokens',
  '*.smtpUrl',
  '*.*.smtpUrl',
  '*.ingressCode',
  '*.credentialsEncrypted',
  '*.sequencerCredentialsEncrypted',
  '*.secretEncrypted',
  '*.previousSecretEncrypted',
];
