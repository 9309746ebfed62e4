import WebSocket from 'ws';

/** What the replay tests of both venues share: a websocket client that keeps every message, and a refused upgrade's answer. */

/** A small deterministic PRNG (mulberry32). */
export function prng(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export interface ReplaySession {
  messages: string[];
  close: Promise<{ code: number; reason: string }>;
  ws: WebSocket;
}

/** An open replay socket; a refused upgrade rejects with its `status` and JSON `body`. */
export function connectReplay(u: string, headers: Record<string, string>): Promise<ReplaySession> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(u, { headers });
    const messages: string[] = [];
    ws.on('message', (d) => messages.push(d.toString()));
    const close = new Promise<{ code: number; reason: string }>((r) => ws.on('close', (code, reason) => r({ code, reason: reason.toString() })));
    ws.once('open', () => resolve({ ws, messages, close }));
    ws.once('unexpected-response', (_req, res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => reject(Object.assign(new Error(`HTTP ${res.statusCode}`), { status: res.statusCode, body: JSON.parse(body || '{}') as unknown })));
    });
    ws.once('error', (e) => reject(e));
  });
}

export interface Refusal {
  status: number;
  body: { error: { code: string; message: string; param?: string } };
}

/** The plain HTTP answer of an upgrade the replay refuses (an accepted one fails the test). */
export async function replayRefusal(u: string, headers: Record<string, string>): Promise<Refusal> {
  let s: ReplaySession;
  try {
    s = await connectReplay(u, headers);
  } catch (e) {
    const x = e as Partial<Refusal>;
    if (x.status !== undefined && x.body !== undefined) return x as Refusal;
    throw e;
  }
  s.ws.close();
  throw new Error('the upgrade was accepted');
}
