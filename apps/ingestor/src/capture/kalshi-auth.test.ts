import { constants, generateKeyPairSync, verify } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { kalshiAuthHeaders, kalshiSignature, loadKalshiPrivateKey, signedPath } from './kalshi-auth.ts';

describe('Kalshi request signing', () => {
  const { publicKey, privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });

  it('produces an RSA-PSS SHA-256 (salt 32) signature over timestamp + GET + path that node verifies', () => {
    const headers = kalshiAuthHeaders({ keyId: 'abc', privateKey }, 'GET', 'ws://127.0.0.1:1234/trade-api/ws/v2?x=1', 1_760_000_000_123);
    expect(headers['KALSHI-ACCESS-KEY']).toBe('abc');
    expect(headers['KALSHI-ACCESS-TIMESTAMP']).toBe('1760000000123');
    const sig = Buffer.from(headers['KALSHI-ACCESS-SIGNATURE']!, 'base64');
    const ok = (message: string, saltLength: number): boolean =>
      verify('sha256', Buffer.from(message), { key: publicKey, padding: constants.RSA_PKCS1_PSS_PADDING, saltLength }, sig);
    expect(ok('1760000000123GET/trade-api/ws/v2', 32)).toBe(true);
    expect(ok('1760000000123GET/trade-api/ws/v2', 20)).toBe(false);
    expect(ok('1760000000124GET/trade-api/ws/v2', 32)).toBe(false);
    expect(ok('1760000000123GET/trade-api/ws/v2?x=1', 32)).toBe(false);
  });

  it('is randomised (PSS) yet always verifies', () => {
    const a = kalshiSignature(privateKey, '1', 'get', '/p');
    const b = kalshiSignature(privateKey, '1', 'GET', '/p');
    expect(a).not.toBe(b);
    for (const s of [a, b]) {
      expect(
        verify('sha256', Buffer.from('1GET/p'), { key: publicKey, padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: 32 }, Buffer.from(s, 'base64')),
      ).toBe(true);
    }
  });

  it('takes the signed path from the URL without the query', () => {
    expect(signedPath('wss://api.elections.kalshi.com/trade-api/ws/v2')).toBe('/trade-api/ws/v2');
    expect(signedPath('/trade-api/ws/v2?a=b')).toBe('/trade-api/ws/v2');
  });

  it('loads PKCS#1 and PKCS#8 PEMs, with real or escaped newlines, and refuses non-RSA keys', () => {
    const pkcs1 = privateKey.export({ type: 'pkcs1', format: 'pem' }).toString();
    const pkcs8 = privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
    expect(loadKalshiPrivateKey(pkcs1).asymmetricKeyType).toBe('rsa');
    expect(loadKalshiPrivateKey(pkcs8.replace(/\n/g, '\\n')).asymmetricKeyType).toBe('rsa');
    const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
    expect(() => loadKalshiPrivateKey(ec)).toThrow(/expected an RSA key/);
    expect(() => loadKalshiPrivateKey('garbage')).toThrow(/not a usable RSA PEM key/);
  });
});
