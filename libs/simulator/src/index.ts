export { startSimulator } from './simulator.ts';
export type { Simulator, SimulatorOptions, SimulatorStats, SimulatedMarketA, SimulatedMarketB, SimVenue } from './simulator.ts';
export type { ExchangeAMarketSpec, ExchangeBMarketSpec, MarketsOption } from './world.ts';
export type { VenueCounters } from './venue-common.ts';
export { BinaryBook, Ladder, YES, NO } from './binary-book.ts';
export type { BookParams, LevelChange, SideIndex } from './binary-book.ts';
export { Rng, deriveSeed } from './prng.ts';
export { connectProbe } from './ws-probe.ts';
export type { Probe } from './ws-probe.ts';
