import { describe, expect, it } from 'vitest';
import { keepBodyBytes, keptBodyBytes } from '../../server/http/body-bytes.js';
import type { HttpEvent } from '../../server/http/types.js';
import { withBearerTokens } from '../../server/local/auth.js';
import type { LambdaHttpHandler } from '../../server/local/server.js';

const event = (body: string, isBase64Encoded = false): HttpEvent => ({ body, isBase64Encoded }) as HttpEvent;

describe('unit: body bytes kept by the server', () => {
  it('keeps valid UTF-8 bytes for the event they were decoded into', () => {
    const bytes = Buffer.from('{"s":"grüße 😀"}');
    const e = event(bytes.toString('utf8'));
    keepBodyBytes(e, bytes);
    expect(keptBodyBytes(e)).toBe(bytes);
    expect(keptBodyBytes(event(e.body ?? ''))).toBeUndefined();
  });

  it('does not keep bytes that are not valid UTF-8 (the decoded text would encode differently)', () => {
    const bytes = Buffer.from([0x22, 0xff, 0x22]);
    const e = event(bytes.toString('utf8'));
    keepBodyBytes(e, bytes);
    expect(keptBodyBytes(e)).toBeUndefined();
  });

  it('does not keep bytes for a base64 body or an empty one', () => {
    const b64 = event('e30=', true);
    keepBodyBytes(b64, Buffer.from('{}'));
    expect(keptBodyBytes(b64)).toBeUndefined();
    const empty = event('');
    keepBodyBytes(empty, Buffer.alloc(0));
    expect(keptBodyBytes(empty)).toBeUndefined();
  });
});

describe('unit: bearer-token wrapper keeps the received bytes', () => {
  it('hands the kept bytes to the event copy it passes on', async () => {
    let seen: Buffer | undefined;
    const inner = (async (e: HttpEvent) => {
      seen = keptBodyBytes(e);
      return { statusCode: 204 };
    }) as LambdaHttpHandler;
    const wrapped = withBearerTokens(inner, { 'secret-token-of-some-length-123456': 'alice' });
    const bytes = Buffer.from('{"items":[]}');
    const e = {
      ...event(bytes.toString('utf8')),
      headers: { authorization: 'Bearer secret-token-of-some-length-123456' },
      requestContext: {},
    } as unknown as HttpEvent;
    keepBodyBytes(e, bytes);
    const res = await wrapped(e, {} as never);
    expect(res.statusCode).toBe(204);
    expect(seen).toBe(bytes);
  });
});
