import type pg from 'pg';
import { Prisma } from '../generated/prisma/client.js';

/**
 * The one way this service writes SQL by hand: Prisma's `sql` template tag, whose `${value}`s become
 * bound parameters where they stand (no `$1..$N` to count), whether the statement goes to Prisma
 * (`$queryRaw`) or to a `pg` pool ({@link query}). Many rows go in as one relation with {@link rows}.
 */
export const sql = Prisma.sql;
export type Sql = Prisma.Sql;
/** `a, b, c` from fragments (or values, each bound). */
export const join = Prisma.join;
/** Text spliced in as SQL, not bound: for identifiers the code itself names, never for input. */
export const raw = Prisma.raw;

/** The PostgreSQL types a {@link rows} column can carry (each column is one array parameter). */
export type ColumnType = 'int' | 'bigint' | 'text' | 'boolean' | 'timestamptz' | 'jsonb';

/** What a column of each type takes from the rows; `jsonb` takes any JSON value, sent as its text. */
interface ColumnValue {
  int: number;
  bigint: number | string | bigint;
  text: string;
  boolean: boolean;
  timestamptz: Date;
  jsonb: unknown;
}

/** A row for `columns`: every column's value, or null. */
export type RowOf<C extends Record<string, ColumnType>> = { [K in keyof C]: ColumnValue[C[K]] | null };

/**
 * `rows` as a relation named `alias`: `unnest(<one array per column>) AS alias(col_a, col_b, ...)`,
 * one array parameter per column of `columns`, in its key order. Keys are camelCase in TypeScript and
 * snake_case in SQL (`requestId` is `alias.request_id`), as the Prisma schema maps them. Values may be
 * null; `jsonb` values are sent as JSON text and cast.
 *
 * @example sql`UPDATE syncs s SET status = i.status FROM ${rows('i', { id: 'bigint', status: 'text' }, items)} WHERE s.id = i.id`
 */
export function rows<C extends Record<string, ColumnType>>(alias: string, columns: C, items: readonly RowOf<C>[]): Sql {
  const names = Object.keys(columns);
  const arrays = names.map((name) => {
    const type = columns[name]!;
    const values = type === 'jsonb' ? items.map((item) => jsonText(item[name])) : items.map((item) => item[name] ?? null);
    return sql`${values}::${raw(type)}[]`;
  });
  return sql`unnest(${join(arrays, ', ')}) AS ${raw(alias)}(${raw(names.map(snakeCase).join(', '))})`;
}

/** Runs `statement` on a `pg` pool or client; `name` makes it a prepared statement (hot paths). */
export function query<T extends pg.QueryResultRow>(client: pg.Pool | pg.ClientBase, statement: Sql, name?: string): Promise<pg.QueryResult<T>> {
  // pg copies a config object on every call; plain text and values are not copied.
  return name ? client.query<T>({ name, text: statement.text, values: statement.values }) : client.query<T>(statement.text, statement.values);
}

function jsonText(value: unknown): string | null {
  return value === null || value === undefined ? null : JSON.stringify(value);
}

const snakeNames = new Map<string, string>();

function snakeCase(name: string): string {
  let snake = snakeNames.get(name);
  if (snake === undefined) {
    snake = name.replace(/[A-Z]/g, (letter) => `_${letter.toLowerCase()}`);
    snakeNames.set(name, snake);
  }
  return snake;
}
