import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { MIGRATIONS_DIR } from './migrations.ts';
import { REBUILT_A_SQL, REBUILT_B_SQL, SERVED_RECORD_SQL } from './served-record-sql.ts';

/**
 * The served record's SQL in code is the one migration 012 checked every copied row against
 * (its `rebuilt` and `payload` ALIAS columns, dropped by migration 014): the same text, so
 * every reader answers byte for byte what it answered through the columns.
 */
describe('served record SQL', () => {
  const sql = readFileSync(path.join(MIGRATIONS_DIR, '012_typed_raw.sql'), 'utf8');
  const column = (table: string, name: string) => {
    const body = sql.slice(sql.indexOf(`CREATE TABLE IF NOT EXISTS {db}.${table}\n`));
    const m = new RegExp(`^\\s*${name}\\s+String ALIAS (.*),$`, 'm').exec(body);
    if (!m) throw new Error(`012: no ${name} in ${table}`);
    return m[1]!;
  };

  it("is migration 012's rebuild of each raw table, word for word", () => {
    expect(REBUILT_A_SQL).toBe(column('raw_exchange_a_v12', 'rebuilt'));
    expect(REBUILT_B_SQL).toBe(column('raw_exchange_b_v12', 'rebuilt'));
  });

  it("is migration 012's payload: the rebuild, or the residue where it is not exact", () => {
    expect(column('raw_exchange_a_v12', 'payload')).toBe("if(residue = '', rebuilt, residue)");
    expect(SERVED_RECORD_SQL['exchange-a']).toBe(`if(residue = '', ${REBUILT_A_SQL}, residue)`);
    expect(SERVED_RECORD_SQL['exchange-b']).toBe(`if(residue = '', ${REBUILT_B_SQL}, residue)`);
  });
});
