import type { ExchangeAEvent, ExchangeBRecord } from '@booktape/domain';

/**
 * What a normaliser makes of one websocket frame.
 * - records: zero or more stored records (an empty array of books is `records: []`).
 * - control: a protocol message that is not market data (PONG, subscribed, error, ok …).
 * - invalid: the frame cannot be understood; capture sends it to the dead-letter topic.
 */
export type NormaliseResult<T> =
  | { kind: 'records'; records: T[] }
  | { kind: 'control'; name: string; detail?: Record<string, unknown> }
  | { kind: 'invalid'; reason: string };

export type ExchangeAResult = NormaliseResult<ExchangeAEvent>;
export type ExchangeBResult = NormaliseResult<ExchangeBRecord>;
