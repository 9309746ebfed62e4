import { describe, expect, it } from 'vitest';
import { ClickHouseError } from '@clickhouse/client';
import { badDataRefusal } from './insert-refusal.ts';

const chError = (code: string, type: string | undefined) => new ClickHouseError({ message: 'x', code, type });

describe('badDataRefusal', () => {
  it('names the refusals that say the rows are wrong', () => {
    expect(badDataRefusal(chError('27', 'CANNOT_PARSE_INPUT_ASSERTION_FAILED'))).toBe('CANNOT_PARSE_INPUT_ASSERTION_FAILED');
    expect(badDataRefusal(chError('72', 'CANNOT_PARSE_NUMBER'))).toBe('CANNOT_PARSE_NUMBER');
    expect(badDataRefusal(chError('53', 'TYPE_MISMATCH'))).toBe('TYPE_MISMATCH');
    expect(badDataRefusal(chError('321', 'VALUE_IS_OUT_OF_RANGE_OF_DATA_TYPE'))).toBe('VALUE_IS_OUT_OF_RANGE_OF_DATA_TYPE');
    // A message whose type was not parsed out still has its code.
    expect(badDataRefusal(chError('117', undefined))).toBe('INCORRECT_DATA');
  });

  it('leaves everything that may pass to the retry: server, network, capacity, schema', () => {
    for (const [code, type] of [
      ['252', 'TOO_MANY_PARTS'],
      ['241', 'MEMORY_LIMIT_EXCEEDED'],
      ['159', 'TIMEOUT_EXCEEDED'],
      ['209', 'SOCKET_TIMEOUT'],
      ['60', 'UNKNOWN_TABLE'],
      ['16', 'NO_SUCH_COLUMN_IN_TABLE'],
      ['62', 'SYNTAX_ERROR'],
      ['242', 'TABLE_IS_READ_ONLY'],
    ] as const) {
      expect(badDataRefusal(chError(code, type))).toBeNull();
    }
    // The type decides: a code we list under another name is not taken on trust.
    expect(badDataRefusal(chError('27', 'SOMETHING_ELSE'))).toBeNull();
    expect(badDataRefusal(Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:8123'), { code: 'ECONNREFUSED' }))).toBeNull();
    expect(badDataRefusal(new Error('socket hang up'))).toBeNull();
    expect(badDataRefusal('CANNOT_PARSE_NUMBER')).toBeNull();
    expect(badDataRefusal(null)).toBeNull();
  });
});
