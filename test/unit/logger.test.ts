/**
 * Log lines are human-readable in a terminal and JSON anywhere else (issue 30): the choice is a pure
 * function of stdout (no real TTY needed here), and both formats censor the same secrets, checked on
 * what each actually writes (pino-pretty through pino's transport, as in a terminal, but into a file).
 */
import { once } from 'node:events';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { pino } from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { createLogger, logFormat, loggerOptions } from '../../src/logger.js';

/** A line's fields: what must be censored beside what must not. */
const FIELDS = { syncId: 42, credentials: { accessToken: 'tok-secret-1' }, connection: { id: 7, refreshToken: 'tok-secret-2', apiKey: 'svcapi_secret3' } };
const SECRETS = ['tok-secret-1', 'tok-secret-2', 'svcapi_secret3'];

describe('logFormat', () => {
  it('is pretty for a terminal and JSON for a pipe, a file or anything that does not say', () => {
    expect(logFormat({ isTTY: true })).toBe('pretty');
    expect(logFormat({ isTTY: false })).toBe('json');
    expect(logFormat({})).toBe('json');
  });

  it('decides for the process stdout (the tests have no TTY there: JSON)', () => {
    expect(logFormat(process.stdout)).toBe(process.stdout.isTTY ? 'pretty' : 'json');
  });
});

describe('loggerOptions', () => {
  it('sends pretty lines through pino-pretty, JSON lines straight out, redacting the same paths', () => {
    const pretty = loggerOptions('info', 'pretty');
    const json = loggerOptions('info', 'json');
    expect(pretty.transport).toMatchObject({ target: 'pino-pretty', options: { colorize: true, ignore: 'pid,hostname' } });
    expect(json.transport).toBeUndefined();
    expect(json.redact).toEqual(pretty.redact);
    expect(pretty.level).toBe('info');
  });
});

describe('what each format writes', () => {
  const dirs: string[] = [];
  afterAll(async () => {
    for (const dir of dirs) await rm(dir, { recursive: true, force: true });
  });

  it('pretty: a readable line with the message and fields, secrets censored, no JSON', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'pss-logger-'));
    dirs.push(dir);
    const file = path.join(dir, 'pretty.log');
    const { transport, ...options } = loggerOptions('info', 'pretty');
    const pretty = transport as { target: string; options: Record<string, unknown> };
    // The terminal's transport, into a file and without colours so the text can be compared.
    const stream = pino.transport({ target: pretty.target, options: { ...pretty.options, colorize: false, destination: file } });
    const logger = pino(options, stream);
    logger.info(FIELDS, 'sync written');
    logger.warn('second line');
    stream.end();
    await once(stream, 'close');
    const text = await readFile(file, 'utf8');

    expect(text).toMatch(/^\[\d{2}:\d{2}:\d{2}\.\d{3}\] INFO: sync written\n/);
    expect(text).toMatch(/\] WARN: second line\n/);
    expect(text).toContain('syncId: 42');
    expect(text).toContain('"[redacted]"');
    for (const secret of SECRETS) expect(text).not.toContain(secret);
    expect(() => JSON.parse(text.split('\n')[0]!) as unknown).toThrow();
  });

  it('JSON: one object a line, secrets censored', () => {
    const sink = new PassThrough();
    const lines: string[] = [];
    sink.on('data', (chunk: Buffer) => lines.push(...chunk.toString('utf8').split('\n').filter(Boolean)));
    createLogger('info', sink).info(FIELDS, 'sync written');

    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0]!)).toMatchObject({
      level: 30,
      msg: 'sync written',
      syncId: 42,
      credentials: '[redacted]',
      connection: { id: 7, refreshToken: '[redacted]', apiKey: '[redacted]' },
    });
    for (const secret of SECRETS) expect(lines[0]).not.toContain(secret);
  });
});
