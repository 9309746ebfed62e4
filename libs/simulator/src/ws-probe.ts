import { WebSocket } from 'ws';

/**
 * A minimal websocket client for tests: records every text frame and waits for conditions
 * instead of sleeping.
 */
export interface Probe {
  readonly ws: WebSocket;
  /** Every frame received, as text, in order. */
  readonly messages: string[];
  send(msg: string | object): void;
  /** Resolves once pred holds over the frames received so far (checked on every frame). */
  waitFor(pred: (messages: string[]) => boolean, timeoutMs?: number): Promise<void>;
  /** Resolves with the close code. */
  readonly closed: Promise<number>;
  close(): Promise<void>;
}

export function connectProbe(url: string, headers?: Record<string, string>): Promise<Probe> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, headers ? { headers } : {});
    const messages: string[] = [];
    const waiters = new Set<() => void>();
    let closeCode: number | null = null;
    const closed = new Promise<number>((r) =>
      ws.on('close', (code) => {
        closeCode = code;
        r(code);
        for (const w of waiters) w();
      }),
    );
    ws.on('message', (data) => {
      messages.push((data as Buffer).toString('utf8'));
      for (const w of waiters) w();
    });
    ws.once('error', reject);
    ws.on('unexpected-response', (_req, res) => {
      reject(Object.assign(new Error(`HTTP ${res.statusCode}`), { status: res.statusCode }));
      res.resume();
      ws.terminate();
    });
    ws.once('open', () => {
      ws.on('error', () => undefined);
      resolve({
        ws,
        messages,
        closed,
        send: (msg) => ws.send(typeof msg === 'string' ? msg : JSON.stringify(msg)),
        waitFor: (pred, timeoutMs = 5000) =>
          new Promise<void>((res, rej) => {
            const check = (): void => {
              if (pred(messages)) {
                done();
                res();
              } else if (closeCode !== null) {
                done();
                rej(new Error(`connection closed (${closeCode}) before the condition held`));
              }
            };
            const timer = setTimeout(() => {
              done();
              rej(new Error(`condition not met within ${timeoutMs} ms (${messages.length} frames received)`));
            }, timeoutMs);
            const done = (): void => {
              clearTimeout(timer);
              waiters.delete(check);
            };
            waiters.add(check);
            check();
          }),
        close: async () => {
          if (ws.readyState === WebSocket.CLOSED) return;
          ws.close();
          const t = setTimeout(() => ws.terminate(), 1000);
          await closed;
          clearTimeout(t);
        },
      });
    });
  });
}
