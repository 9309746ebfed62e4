// Kafka wire protocol, just enough for a readiness probe: a Metadata v1 request for no topics.
// The broker answers only once it processes requests, and lists itself among the brokers only
// once it is registered and unfenced, i.e. ready to take produce requests.

import { KAFKA_NODE_ID } from './config.mjs';
import { tcpExchange } from './tcp.mjs';

function kafkaMetadataRequest(correlationId) {
  const clientId = Buffer.from('booktape-services-probe');
  const body = Buffer.alloc(2 + 2 + 4 + 2 + clientId.length + 4);
  let o = 0;
  o = body.writeInt16BE(3, o); // api_key Metadata
  o = body.writeInt16BE(1, o); // api_version 1
  o = body.writeInt32BE(correlationId, o);
  o = body.writeInt16BE(clientId.length, o);
  o += clientId.copy(body, o);
  body.writeInt32BE(0, o); // topics: empty array (v1: empty = none, null = all)
  const size = Buffer.alloc(4);
  size.writeInt32BE(body.length);
  return Buffer.concat([size, body]);
}

function parseMetadataBrokers(buf, correlationId) {
  if (buf.length < 4) return undefined;
  const size = buf.readInt32BE(0);
  if (buf.length < 4 + size) return undefined;
  let o = 4;
  if (buf.readInt32BE(o) !== correlationId) return null;
  o += 4;
  const n = buf.readInt32BE(o);
  o += 4;
  const brokers = [];
  for (let i = 0; i < n; i++) {
    const nodeId = buf.readInt32BE(o);
    o += 4;
    const hostLen = buf.readInt16BE(o);
    o += 2;
    const host = buf.subarray(o, o + hostLen).toString('utf8');
    o += hostLen;
    const port = buf.readInt32BE(o);
    o += 4;
    const rackLen = buf.readInt16BE(o);
    o += 2 + Math.max(0, rackLen);
    brokers.push({ nodeId, host, port });
  }
  return brokers;
}

/** 'ready' when the broker lists itself, 'starting' while it answers without doing so, else null. */
export async function kafkaProbe(k, timeoutMs = 2000) {
  const cid = 1 + Math.floor(Math.random() * 1e9);
  const brokers = await tcpExchange(
    k.host,
    k.port,
    kafkaMetadataRequest(cid),
    (buf) => parseMetadataBrokers(buf, cid),
    timeoutMs,
  );
  if (brokers === null) return null; // not answering
  return brokers.some((b) => b.nodeId === KAFKA_NODE_ID) ? 'ready' : 'starting';
}
