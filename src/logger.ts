import { pino, type Logger, type LoggerOptions } from 'pino';
import type { LogLevel } from './config.js';

export type { Logger };

/** How log lines are written: `pretty` for a person at a terminal, `json` (one object a line) for anything else. */
export type LogFormat = 'pretty' | 'json';

/**
 * The format for an output stream: pretty lines when it is a terminal (`npm start` in a shell), JSON lines
 * otherwise: a pipe, a file, a log collector, a container without a TTY, the tests' child processes. Pure.
 */
export function logFormat(output: { isTTY?: boolean }): LogFormat {
  return output.isTTY === true ? 'pretty' : 'json';
}

/**
 * pino's options for a format. Both censor the same secrets: redaction happens before a line is written,
 * whichever way it is written. Pretty lines go through pino-pretty in pino's worker thread.
 */
export function loggerOptions(level: LogLevel, format: LogFormat): LoggerOptions {
  const options: LoggerOptions = { level, redact: { paths: REDACTED_PATHS, censor: '[redacted]' } };
  if (format === 'json') return options;
  return { ...options, transport: { target: 'pino-pretty', options: { colorize: true, ignore: 'pid,hostname', translateTime: 'SYS:HH:MM:ss.l' } } };
}

/**
 * The service's logger on stdout, pretty or JSON as {@link logFormat} decides for stdout. With a
 * `destination` (tests, benchmarks), JSON lines to it.
 */
export function createLogger(level: LogLevel, destination?: NodeJS.WritableStream): Logger {
  if (destination) return pino(loggerOptions(level, 'json'), destination as pino.DestinationStream);
  return pino(loggerOptions(level, logFormat(process.stdout)));
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
