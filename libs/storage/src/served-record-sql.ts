/**
 * The served record of a raw row, as SQL: the JSON text every reader that serves a stored
 * record selects (raw pages, exports, replay, dumps). The raw tables store typed columns
 * (migration 012); the record is rebuilt from them byte for byte, or is the row's `residue`
 * where the rebuild is not exact (the sink and migration 012 decide per row; raw-codec.ts
 * holds the JavaScript twin of the rebuild).
 *
 * Migration 012 gave the tables these expressions as ALIAS columns (`rebuilt`, `payload`);
 * migration 014 dropped them, because the engine's analyzer resolved them for every query
 * naming a raw table, read or not (3–6 ms of every raw read, the book's included). So the
 * expression lives here, once, and only a query that serves records pays for it. It is the
 * text of migration 012's columns (served-record-sql.test.ts compares them).
 */
import type { Venue } from '@booktape/domain';

/** A typed decimal (Int64 mantissa `v`, UInt8 count of decimals `s`) spelled as the venue did. */
const dec = (v: string, s: string) =>
  `if(${s} = 0, toString(${v}), concat(if(${v} < 0, '-', ''), toString(intDiv(abs(${v}), intExp10(least(${s}, 18)))), '.', leftPad(toString(abs(${v}) % intExp10(least(${s}, 18))), ${s}, '0')))`;

/** Exchange A's levels of one side: `[{"price":"…","size":"…"},…]`. */
const aLevels = (side: string) =>
  `arrayStringConcat(arrayMap((p, ps, z, zs) -> concat('{"price":"', ${dec('p', 'ps')}, '","size":"', ${dec('z', 'zs')}, '"}'), ${side}_price, ${side}_price_scale, ${side}_size, ${side}_size_scale), ',')`;

/** An optional best price of a change (scale 255: absent). */
const aBest = (name: string, v: string, s: string) => `if(${s} = 255, '', concat(',"${name}":"', ${dec(v, s)}, '"'))`;

const A_CHANGES =
  `arrayStringConcat(arrayMap((p, ps, sd, z, zs, h, bb, bbs, ba, bas) -> concat('{"price":"', ${dec('p', 'ps')}, '","side":"', toString(sd), '","size":"', ${dec('z', 'zs')}, '"', ` +
  `if(h = '', '', concat(',"hash":"', h, '"')), ${aBest('best_bid', 'bb', 'bbs')}, ${aBest('best_ask', 'ba', 'bas')}, '}'), ` +
  `chg_price, chg_price_scale, chg_side, chg_size, chg_size_scale, chg_hash, chg_best_bid, chg_best_bid_scale, chg_best_ask, chg_best_ask_scale), ',')`;

/** raw_exchange_a's record rebuilt from its typed columns (migration 012's `rebuilt`). */
export const REBUILT_A_SQL =
  `concat('{', if(extra = '', '', concat(extra, ',')), '"market":"', market, '","asset_id":"', asset_id, '","timestamp":"', toString(toUnixTimestamp64Milli(event_ts)), ` +
  `'","hash":"', if(hash = '' AND notEmpty(chg_hash), chg_hash[1], hash), '","event_type":"', event_type, '"', ` +
  `multiIf(event_type = 'book', concat(',"bids":[', ${aLevels('bid')}, '],"asks":[', ${aLevels('ask')}, ']'), ` +
  `event_type = 'price_change', concat(',"changes":[', ${A_CHANGES}, ']'), ''), '}')`;

/** Exchange B's levels of one side: `[["price","size"],…]`, or null. */
const bLevels = (side: string) =>
  `if(${side}_null = 1, 'null', concat('[', arrayStringConcat(arrayMap((p, ps, z, zs) -> concat('["', ${dec('p', 'ps')}, '","', ${dec('z', 'zs')}, '"]'), ${side}_price, ${side}_price_scale, ${side}_size, ${side}_size_scale), ','), ']'))`;

/** A DateTime64(3) as ISO 8601 with milliseconds. */
const iso = (t: string) => `concat(replaceOne(toString(${t}), ' ', 'T'), 'Z')`;

const B_VENUE_TS = `',"venue_ts":', if(isNull(venue_ts), 'null', concat('"', ${iso('assumeNotNull(venue_ts)')}, '"'))`;
const B_MARKET_ID = `',"market_id":', if(isNull(market_id), 'null', concat('"', assumeNotNull(market_id), '"'))`;
/** A nullable typed decimal (scale 254: JSON null, 255: absent, both spelled null). */
const bNumber = (v: string, s: string) => `if(${s} >= 254, 'null', concat('"', ${dec(v, s)}, '"'))`;

/** raw_exchange_b's record rebuilt from its typed columns (migration 012's `rebuilt`). */
export const REBUILT_B_SQL =
  `concat('{"type":"', record_type, '","ticker":"', ticker, '","timestamp":"', ${iso('event_ts')}, '","epoch_ms":', toString(toUnixTimestamp64Milli(event_ts)), ` +
  `',"sid":', if(isNull(sid), 'null', toString(assumeNotNull(sid))), ',"seq":', if(isNull(seq), 'null', toString(assumeNotNull(seq))), ` +
  `multiIf(record_type = 'snapshot', concat(',"yes":', ${bLevels('yes')}, ',"no":', ${bLevels('no')}, ${B_VENUE_TS}, ${B_MARKET_ID}), ` +
  `record_type = 'delta', concat(',"side":"', side, '","price":', ${bNumber('price', 'price_scale')}, ',"delta":', ${bNumber('delta', 'delta_scale')}, ${B_VENUE_TS}, ${B_MARKET_ID}), ` +
  `record_type = 'gap', if(isNull(expected_seq), '', concat(',"expected_seq":', toString(assumeNotNull(expected_seq)))), ` +
  `concat(${B_VENUE_TS}, ',"data":', data)), '}')`;

/**
 * The served record of a row of the venue's raw table, JSON text (migration 012's `payload`):
 * the rebuild, or the residue where the rebuild is not byte-exact.
 */
export const SERVED_RECORD_SQL: { readonly [V in Venue]: string } = {
  'exchange-a': `if(residue = '', ${REBUILT_A_SQL}, residue)`,
  'exchange-b': `if(residue = '', ${REBUILT_B_SQL}, residue)`,
};
