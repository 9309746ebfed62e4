import fc from 'fast-check';

/**
 * An fc.asyncProperty whose every run starts on a turn of the event loop of its own, for a
 * property that is synchronous and long. fc.assert over a plain fc.property holds the test
 * worker's event loop for the whole assertion: on a loaded machine (a CI run) some of ours
 * take over a minute, vitest's worker then misses the replies to its own calls and the run
 * fails with `Timeout calling "onTaskUpdate"` although every test passed. Await the
 * assertion: `await fc.assert(turnTaking(arbA, arbB, (a, b) => …), { numRuns })`, and give
 * the test a timeout that fits: an awaited assertion is held to it, a synchronous one never was.
 */
export function turnTaking<Ts extends [unknown, ...unknown[]]>(
  ...args: [...arbitraries: { [K in keyof Ts]: fc.Arbitrary<Ts[K]> }, predicate: (...values: Ts) => boolean | void]
): fc.IAsyncPropertyWithHooks<Ts> {
  const predicate = args[args.length - 1] as (...values: Ts) => boolean | void;
  const arbitraries = args.slice(0, -1) as unknown as { [K in keyof Ts]: fc.Arbitrary<Ts[K]> };
  const yielding = async (...values: Ts): Promise<boolean | void> => {
    await new Promise<void>((resolve) => setImmediate(resolve));
    return predicate(...values);
  };
  return (fc.asyncProperty as unknown as (...a: unknown[]) => fc.IAsyncPropertyWithHooks<Ts>)(...arbitraries, yielding);
}
