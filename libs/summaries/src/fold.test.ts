import { describe, expect, it } from 'vitest';
import { aggregateObservations, newBook, type Observation } from '@booktape/book';
import type { ExchangeBRecord } from '@booktape/domain';
import { BookFold, bookFromState, dayStartMs } from './fold.ts';

const T = Date.UTC(2026, 2, 1, 10);
const common = (ms: number, seq: number) => ({ ticker: 'KXFOLD-26MAR01', timestamp: new Date(ms).toISOString(), epoch_ms: ms, sid: 3, seq });
const records: ExchangeBRecord[] = [
  { ...common(T, 1), type: 'snapshot', yes: [['0.41', '20'], ['0.42', '13']], no: [['0.54', '200']] },
  { ...common(T + 30_000, 2), type: 'delta', side: 'yes', price: '0.43', delta: '5' },
  { ...common(T + 61_000, 3), type: 'delta', side: 'no', price: '0.55', delta: '7' },
  { ...common(T + 125_000, 4), type: 'delta', side: 'yes', price: '0.43', delta: '-5' },
];

function observations(): Observation[] {
  const book = newBook('exchange-b');
  return records.map((r) => book.apply(r)).filter((o): o is Observation => o !== null);
}

describe('BookFold', () => {
  it('buckets what the book observes, as aggregating its observations does', () => {
    const fold = new BookFold(newBook('exchange-b'), 60);
    for (const r of records) fold.apply(r);
    expect(fold.finish()).toEqual(aggregateObservations(observations(), 60));
    expect(fold.carried).toBeNull();
  });

  it('carries the last observation before fromMs instead of counting it', () => {
    const fold = new BookFold(newBook('exchange-b'), 60, T + 60_000);
    for (const r of records) fold.apply(r);
    const obs = observations();
    expect(fold.carried).toEqual(obs[1]);
    expect(fold.finish()).toEqual(aggregateObservations(obs.slice(2), 60));
  });

  it('continues from a stored state as the book it was stored from', () => {
    const book = newBook('exchange-b');
    book.apply(records[0]!);
    const restored = new BookFold(bookFromState('exchange-b', JSON.stringify(book.toState())), 1);
    const straight = new BookFold(book, 1);
    for (const r of records.slice(1)) {
      restored.apply(r);
      straight.apply(r);
    }
    expect(restored.finish()).toEqual(straight.finish());
    expect(bookFromState('exchange-a', '').lastObservation()).toBeNull();
  });
});

describe('dayStartMs', () => {
  it('is the UTC midnight of a date', () => {
    expect(dayStartMs('2026-03-01')).toBe(Date.UTC(2026, 2, 1));
    expect(dayStartMs('nonsense')).toBeNaN();
  });
});
