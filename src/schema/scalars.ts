import { GraphQLError, Kind } from 'graphql';
import { builder } from './builder.js';

builder.scalarType('DateTime', {
  description: 'An ISO 8601 date-time in UTC, e.g. 2026-11-22T04:25:00.000Z.',
  serialize: (value) => value.toISOString(),
  parseValue: (value) => parseDate(value),
  parseLiteral: (ast) => parseDate(ast.kind === Kind.STRING ? ast.value : undefined),
});

builder.scalarType('JSON', {
  description: 'Any JSON value, as stored.',
  serialize: (value) => value,
  parseValue: (value) => value,
});

builder.scalarType('BigInt', {
  description: 'A 64-bit id, rendered as a JSON number (ids stay below 2^53).',
  serialize: (value) => Number(value),
  parseValue: (value) => parseBigInt(value),
  parseLiteral: (ast) => parseBigInt(ast.kind === Kind.INT || ast.kind === Kind.STRING ? ast.value : undefined),
});

function parseBigInt(value: unknown): bigint {
  if ((typeof value === 'number' && Number.isSafeInteger(value)) || (typeof value === 'string' && /^\d{1,19}$/.test(value))) return BigInt(value);
  throw new GraphQLError('BigInt must be a whole number');
}

function parseDate(value: unknown): Date {
  const date = typeof value === 'string' ? new Date(value) : undefined;
  if (!date || Number.isNaN(date.getTime())) throw new GraphQLError('DateTime must be an ISO 8601 date-time string');
  return date;
}
