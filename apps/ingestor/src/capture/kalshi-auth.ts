import { constants, createPrivateKey, sign, type KeyObject } from 'node:crypto';

/**
 * Exchange B (Kalshi) request signing: KALSHI-ACCESS-SIGNATURE is base64 RSA-PSS over
 * `timestamp + METHOD + path` with SHA-256, MGF1 SHA-256 and a salt as long as the digest.
 * The path is the URL's path without query string (`/trade-api/ws/v2` for the websocket).
 */

export interface KalshiCredentials {
  keyId: string;
  privateKey: KeyObject;
}

const SALT_LENGTH = 32; // = SHA-256 digest length, as the venue requires

/** Parses a PEM private key (PKCS#1 or PKCS#8); tolerates `\n` escapes from env variables. */
export function loadKalshiPrivateKey(pem: string): KeyObject {
  const text = pem.includes('-----BEGIN') && !pem.includes('\n') ? pem.replace(/\\n/g, '\n') : pem;
  try {
    const key = createPrivateKey(text);
    if (key.asymmetricKeyType !== 'rsa') throw new Error(`expected an RSA key, got ${key.asymmetricKeyType ?? 'unknown'}`);
    return key;
  } catch (err) {
    throw new Error(`Kalshi private key is not a usable RSA PEM key: ${(err as Error).message}`);
  }
}

/** The path that is signed: the URL's path without query (`ws://h/trade-api/ws/v2?x` → `/trade-api/ws/v2`). */
export function signedPath(urlOrPath: string): string {
  if (urlOrPath.startsWith('/')) return urlOrPath.split('?')[0] as string;
  return new URL(urlOrPath).pathname;
}

export function kalshiSignature(privateKey: KeyObject, timestampMs: string, method: string, path: string): string {
  return sign('sha256', Buffer.from(`${timestampMs}${method.toUpperCase()}${path}`), {
    key: privateKey,
    padding: constants.RSA_PKCS1_PSS_PADDING,
    saltLength: SALT_LENGTH,
  }).toString('base64');
}

export function kalshiAuthHeaders(
  creds: KalshiCredentials,
  method: string,
  urlOrPath: string,
  nowMs: number = Date.now(),
): Record<string, string> {
  const ts = String(Math.floor(nowMs));
  return {
    'KALSHI-ACCESS-KEY': creds.keyId,
    'KALSHI-ACCESS-TIMESTAMP': ts,
    'KALSHI-ACCESS-SIGNATURE': kalshiSignature(creds.privateKey, ts, method, signedPath(urlOrPath)),
  };
}
