// Raw TCP, enough to ask a service whether it answers its own protocol (Redis PING, Kafka
// Metadata) without any client library: this runs before `npm install`.

import net from 'node:net';

export function portOpen(host, port, timeoutMs = 1000) {
  return new Promise((resolve) => {
    const sock = net.connect({ host, port });
    const done = (ok) => {
      sock.removeAllListeners();
      sock.destroy();
      resolve(ok);
    };
    sock.setTimeout(timeoutMs, () => done(false));
    sock.once('connect', () => done(true));
    sock.once('error', () => done(false));
  });
}

/**
 * Open a TCP connection, write `request`, and collect bytes until `isComplete(buffer)` returns
 * a result other than undefined. Resolves to that result, or null on error/timeout.
 */
export function tcpExchange(host, port, request, isComplete, timeoutMs = 2000) {
  return new Promise((resolve) => {
    let buf = Buffer.alloc(0);
    let settled = false;
    const sock = net.connect({ host, port });
    const finish = (v) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      sock.removeAllListeners();
      sock.on('error', () => {});
      sock.destroy();
      resolve(v);
    };
    const timer = setTimeout(() => finish(null), timeoutMs);
    sock.once('connect', () => sock.write(request));
    sock.on('data', (chunk) => {
      buf = Buffer.concat([buf, chunk]);
      let r;
      try {
        r = isComplete(buf);
      } catch {
        r = null;
      }
      if (r !== undefined) finish(r);
    });
    sock.once('error', () => finish(null));
    sock.once('close', () => finish(null));
  });
}
