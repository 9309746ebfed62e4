export * from './normalise.types.ts';
export * from './content-hash.ts';
export * from './exchange-a.normaliser.ts';
export * from './exchange-b.normaliser.ts';
export * from './sequencer.ts';
export * from './capture-file.ts';
export * from './gamma.client.ts';
export * from './registry.ts';
