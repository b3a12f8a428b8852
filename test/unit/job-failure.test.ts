import { describe, expect, it } from 'vitest';
import { failureMessage, isTransientFailure } from '../../src/domain/job-failure.js';

const withCode = (code: string, message = 'x') => Object.assign(new Error(message), { code });

describe('isTransientFailure', () => {
  it.each([
    ['08006', true], // connection failure
    ['40P01', true], // deadlock
    ['40001', true], // serialization
    ['53300', true], // too many connections
    ['57P01', true], // admin shutdown
    ['ECONNREFUSED', true],
    ['ECONNRESET', true],
    ['08P01', false], // protocol violation: the same statement breaks the protocol every time
    ['22021', false], // invalid byte sequence (a NUL)
    ['22P02', false], // invalid text representation
    ['23505', false], // unique violation
    ['42703', false], // undefined column: a programming error
  ])('%s: %s', (code, transient) => {
    expect(isTransientFailure(withCode(code))).toBe(transient);
  });

  it('knows pg-pool losing its connection, and takes anything else as lasting', () => {
    expect(isTransientFailure(new Error('Connection terminated unexpectedly'))).toBe(true);
    expect(isTransientFailure(new TypeError("Cannot read properties of undefined (reading 'email')"))).toBe(false);
    expect(isTransientFailure('a string')).toBe(false);
  });
});

describe('failureMessage', () => {
  it('is one line of at most 300 characters', () => {
    expect(failureMessage(new Error('a\n  b'))).toBe('a b');
    expect(failureMessage(new Error('x'.repeat(400)))).toHaveLength(301);
    expect(failureMessage(new Error(''))).toBe('unknown error');
  });
});
