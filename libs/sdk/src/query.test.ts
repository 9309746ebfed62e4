import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { snake, toQuery } from './query.ts';

describe('toQuery', () => {
  it('maps camelCase names to the API snake_case ones, in order, leaving out undefined and null', () => {
    expect(toQuery({ conditionId: '0xabc', date: '2026-03-01', offset: 0, limit: undefined, prefix: null })).toEqual([
      ['condition_id', '0xabc'],
      ['date', '2026-03-01'],
      ['offset', '0'],
    ]);
    expect(toQuery({ ticker: 'KX-1', startDate: '2026-03-01', endDate: '2026-03-02', assetId: '123' })).toEqual([
      ['ticker', 'KX-1'],
      ['start_date', '2026-03-01'],
      ['end_date', '2026-03-02'],
      ['asset_id', '123'],
    ]);
  });

  it('names from / to / at after the time parameters on market-data routes, Dates as Unix ms', () => {
    const from = new Date(Date.UTC(2026, 2, 1));
    expect(toQuery({ conditionId: '0x1', from, to: 1772409599, cursor: 'v1.x' }, { timeNames: true })).toEqual([
      ['condition_id', '0x1'],
      ['start_timestamp', String(from.getTime())],
      ['end_timestamp', '1772409599'],
      ['cursor', 'v1.x'],
    ]);
    expect(toQuery({ assetId: '9', at: new Date(1772452800000), depth: 5 }, { timeNames: true })).toEqual([
      ['asset_id', '9'],
      ['timestamp', '1772452800000'],
      ['depth', '5'],
    ]);
  });

  it('leaves from / to alone where they are the API own names (usage windows)', () => {
    expect(toQuery({ from: '2026-05-01', to: '2026-05-31', status: '2xx' })).toEqual([
      ['from', '2026-05-01'],
      ['to', '2026-05-31'],
      ['status', '2xx'],
    ]);
  });

  it('writes a Date for a date parameter as its UTC day', () => {
    expect(toQuery({ date: new Date('2026-03-01T23:59:59.999Z') })).toEqual([['date', '2026-03-01']]);
    expect(toQuery({ startDate: new Date('2026-03-01T00:00:00Z'), endDate: new Date('2026-03-31T12:00:00Z') })).toEqual([
      ['start_date', '2026-03-01'],
      ['end_date', '2026-03-31'],
    ]);
  });

  it('snake inverts the type-level camelCase of any snake_case name', () => {
    const camel = (s: string) => s.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase());
    fc.assert(fc.property(fc.array(fc.stringMatching(/^[a-z][a-z0-9]{0,6}$/), { minLength: 1, maxLength: 4 }), (parts) => snake(camel(parts.join('_'))) === parts.join('_')));
  });
});
