/** Polls until `check` returns a truthy value or the time runs out (then throws `what`). */
export async function waitFor<T>(what: string, check: () => Promise<T> | T, timeoutMs = 30_000, everyMs = 100): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await check();
      if (v) return v;
      last = v;
    } catch (e) {
      last = e;
    }
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what} (last: ${String(last)})`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/**
 * waitFor in the argument order the websocket feed tests use. It polls every 5 ms because
 * those tests wait on in-memory frames, where a 100 ms step would make up most of their run.
 */
export async function waitUntil(cond: () => boolean, timeoutMs = 5000, what = 'condition'): Promise<void> {
  await waitFor(what, cond, timeoutMs, 5);
}
