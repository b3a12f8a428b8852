import { describe, expect, it } from 'vitest';
import { rows, sql } from '../../src/db/sql.js';

describe('rows', () => {
  it('is one unnest of one typed array per column, snake_case in SQL, in the columns’ order', () => {
    const input = rows('i', { requestId: 'bigint', status: 'text', error: 'jsonb', retry: 'boolean' }, [
      { requestId: 1, status: 'error', error: { message: 'no' }, retry: true },
      { requestId: '2', status: 'success', error: null, retry: false },
    ]);
    expect(input.text).toBe('unnest($1::bigint[], $2::text[], $3::jsonb[], $4::boolean[]) AS i(request_id, status, error, retry)');
    expect(input.values).toEqual([
      [1, '2'],
      ['error', 'success'],
      ['{"message":"no"}', null],
      [true, false],
    ]);
  });

  it('numbers its parameters after those of the statement it is placed in', () => {
    const statement = sql`SELECT * FROM ${rows('i', { id: 'int' }, [{ id: 7 }])} WHERE i.id > ${3}`;
    expect(statement.text).toBe('SELECT * FROM unnest($1::int[]) AS i(id) WHERE i.id > $2');
    expect(statement.values).toEqual([[7], 3]);
  });
});
