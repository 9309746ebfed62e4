import type { ServerResponse } from 'node:http';

/**
 * The slow-reader floor (issue 27). A streamed answer pulls rows from the store only as fast
 * as its client reads them (back-pressure), so a client that reads at 1 KB/s holds a store
 * stream session (one of a handful per process) for hours. A reader whose answer was handed
 * to its socket at less than `bytesPerSecond` over the last `windowMs` loses its session:
 * the store read is cancelled at once, and the client gets what was already buffered for it,
 * then a trailing error marker (`slow_reader`) in the answer's own format, then the end of
 * the connection. The answer is cut, so it is not billed.
 *
 * Cut rather than buffered: a whole page of 100,000 records is tens of MB, and a buffer that
 * holds it per slow connection (or spills it to disk) moves the cost from the engine to
 * memory or disk without bound; a fast client loses nothing either way, and a client cut off
 * is told so in the answer, with where the rows it got end, and may ask for smaller pages.
 */
export interface FloorOptions {
  /** 0: no floor. */
  bytesPerSecond: number;
  /** The window the rate is taken over; also the grace before the first check. */
  windowMs: number;
}

/** How often the rate is looked at. */
const TICK_MS = 1000;

/**
 * Whether a reader is below the floor (pure): `samples` are the bytes handed out so far,
 * one per tick, oldest first, the last the current one. Not before a whole window has
 * passed (a page's first bytes fill the socket buffers at once; a slow start is allowed).
 */
export function belowFloor(samples: readonly number[], tickMs: number, o: FloorOptions): boolean {
  const rate = windowRate(samples, tickMs, o);
  return o.bytesPerSecond > 0 && rate !== null && rate < o.bytesPerSecond;
}

/** Bytes per second over the last window, or null before a whole window has passed. */
export function windowRate(samples: readonly number[], tickMs: number, o: FloorOptions): number | null {
  const ticks = Math.max(1, Math.ceil(o.windowMs / tickMs));
  if (samples.length <= ticks) return null;
  const now = samples[samples.length - 1]!;
  const then = samples[samples.length - 1 - ticks]!;
  return ((now - then) * 1000) / (ticks * tickMs);
}

/** Watches the bytes an answer hands out; calls `onCut` once when they fall below the floor. */
export class FloorWatch {
  private total = 0;
  private readonly samples: number[] = [0];
  private readonly timer: NodeJS.Timeout | null;
  cut = false;

  constructor(
    private readonly o: FloorOptions,
    onCut: (rate: number) => void,
    tickMs = TICK_MS,
  ) {
    this.timer =
      o.bytesPerSecond > 0
        ? setInterval(() => {
            this.samples.push(this.total);
            const keep = Math.ceil(o.windowMs / tickMs) + 1;
            if (this.samples.length > keep + 1) this.samples.shift();
            if (!this.cut && belowFloor(this.samples, tickMs, o)) {
              this.cut = true;
              this.stop();
              onCut(windowRate(this.samples, tickMs, o) ?? 0);
            }
          }, tickMs)
        : null;
    this.timer?.unref();
  }

  add(bytes: number): void {
    this.total += bytes;
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
  }
}

const cutAnswers = new WeakMap<ServerResponse, string>();

/** Marks an answer as cut by the server (a slow reader): logged as CUT_STATUS, not billed. */
export function markCut(res: ServerResponse, reason: string): void {
  cutAnswers.set(res, reason);
}

/** Why an answer was cut, or undefined. */
export function cutReason(res: ServerResponse): string | undefined {
  return cutAnswers.get(res);
}

/** The request-log status of an answer cut for a slow reader (the client did not keep up). */
export const CUT_STATUS = 408;

/** How long a cut answer's client has to take what was buffered for it before the connection is closed. */
export const CUT_DRAIN_MS = 30_000;

export const SLOW_READER_CODE = 'slow_reader';

export function slowReaderMessage(o: FloorOptions, rate: number): string {
  return `the answer was cut: it was read at ${Math.round(rate)} bytes/s over the last ${o.windowMs / 1000} s, below the floor of ${o.bytesPerSecond} bytes/s that holds a store stream session; the rows before this marker are complete (ask again from after the last of them, or with a smaller limit), and the request was not billed`;
}
