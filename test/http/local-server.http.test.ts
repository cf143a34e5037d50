/**
 * The local server's HTTP edge: a body over the limit is answered 413 with a code, and the
 * client gets to read that answer however large its body and however slowly it sends it (the
 * server reads the refused body to its end before answering and closing, instead of closing
 * while the client is still writing, which makes the client's send fail with EPIPE).
 */
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keptBodyBytes } from '../../server/http/body-bytes.js';
import { startLocalServer, type LocalServer } from '../../server/local/server.js';

const LIMIT = 64 * 1024;
let server: LocalServer;
let handled = 0;
/** The bytes the server kept for the last event it handed over (see body-bytes.ts). */
let lastKept: Buffer | undefined;

beforeAll(async () => {
  server = await startLocalServer({
    handler: async (event) => {
      handled++;
      lastKept = keptBodyBytes(event);
      return { statusCode: 200, headers: { 'content-type': 'application/json' }, body: '{}' };
    },
    host: '127.0.0.1',
    port: 0,
    maxBodyBytes: LIMIT,
  });
});
afterAll(() => server.close());

/**
 * Sends a request by hand, its body in `chunks` pieces `gapMs` apart, the way a client that
 * writes its whole body before reading does. Resolves with the answer, and whether the
 * server closed the connection before the body was all sent (such a client then fails with
 * EPIPE or a reset and never reads the answer).
 */
function slowPost(
  contentLength: number | undefined,
  body: Buffer,
  chunks: number,
  gapMs: number,
): Promise<{ response: string; closedBeforeSent: boolean; error?: string }> {
  return new Promise((resolve) => {
    const sock = connect({ port: server.port, host: '127.0.0.1', allowHalfOpen: true });
    let response = '';
    let sent = false;
    let closedBeforeSent = false;
    let error: string | undefined;
    sock.on('data', (d: Buffer) => (response += d.toString()));
    sock.on('end', () => {
      if (!sent) closedBeforeSent = true;
      sock.end();
    });
    sock.on('error', (e: NodeJS.ErrnoException) => (error ??= e.code ?? e.message));
    sock.on('close', () => resolve({ response, closedBeforeSent, ...(error ? { error } : {}) }));
    const send = async (): Promise<void> => {
      const head = [
        'POST /api/v1/push HTTP/1.1',
        'host: local',
        'content-type: application/json',
        contentLength === undefined ? 'transfer-encoding: chunked' : `content-length: ${contentLength}`,
        '',
        '',
      ].join('\r\n');
      sock.write(head);
      const size = Math.ceil(body.length / chunks);
      for (let i = 0; i < body.length; i += size) {
        await new Promise((r) => setTimeout(r, gapMs));
        if (sock.destroyed || sock.writableEnded) return;
        const part = body.subarray(i, i + size);
        sock.write(
          contentLength === undefined
            ? Buffer.concat([Buffer.from(`${part.length.toString(16)}\r\n`), part, Buffer.from('\r\n')])
            : part,
        );
      }
      if (contentLength === undefined && !sock.destroyed) sock.write('0\r\n\r\n');
      sent = true;
    };
    // Fire and forget: 'close' settles the promise; a throw while sending fails the test as an unhandled rejection.
    sock.on('connect', () => void send());
  });
}

describe('local server: request bodies over the limit', () => {
  it('answers 413 payload_too_large to a client still sending a declared-too-large body', async () => {
    const body = Buffer.alloc(LIMIT * 4, 'z');
    const r = await slowPost(body.length, body, 8, 40);
    expect(r).toMatchObject({ closedBeforeSent: false });
    expect(r.error).toBeUndefined();
    expect(r.response).toMatch(/^HTTP\/1\.1 413 /);
    expect(r.response).toMatch(/connection: close/i);
    expect(r.response).toContain('"code":"payload_too_large"');
    expect(handled).toBe(0);
  });

  it('answers 413 to a chunked body that grows past the limit', async () => {
    const body = Buffer.alloc(LIMIT * 3, 'z');
    const r = await slowPost(undefined, body, 6, 40);
    expect(r).toMatchObject({ closedBeforeSent: false });
    expect(r.error).toBeUndefined();
    expect(r.response).toMatch(/^HTTP\/1\.1 413 /);
    expect(r.response).toContain('"code":"payload_too_large"');
    expect(handled).toBe(0);
  });
});

describe('local server: the bytes it received go with the event', () => {
  it('keeps a UTF-8 body as received, and none for invalid UTF-8', async () => {
    const sent = Buffer.from('{ "items": [ {"queue":"q", "payload": "grüße 😀"} ] }');
    await fetch(`${server.url}/api/v1/push`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: sent,
    });
    expect(lastKept?.equals(sent)).toBe(true);
    await fetch(`${server.url}/api/v1/push`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: Buffer.from([0x22, 0xff, 0x22]),
    });
    expect(lastKept).toBeUndefined();
  });
});

describe('local server: a client that goes away mid-upload', () => {
  it('is a debug line, not an error with a stack, and nothing is handled', async () => {
    const lines: { level: string; message: string }[] = [];
    let calls = 0;
    const quiet = await startLocalServer({
      handler: async () => {
        calls++;
        return { statusCode: 200, body: '{}' };
      },
      host: '127.0.0.1',
      port: 0,
      maxBodyBytes: LIMIT,
      log: {
        error: (message) => void lines.push({ level: 'error', message }),
        debug: (message) => void lines.push({ level: 'debug', message }),
      },
    });
    try {
      await new Promise<void>((resolve, reject) => {
        const socket = connect(quiet.port, '127.0.0.1', () => {
          socket.write(
            'POST /api/v1/push HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: 1000\r\n\r\n{"items":[',
          );
          setTimeout(() => {
            socket.destroy();
            resolve();
          }, 50);
        });
        socket.on('error', reject);
      });
      const end = Date.now() + 2000;
      while (lines.length === 0 && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
      expect(lines).toEqual([{ level: 'debug', message: 'request body aborted by the client' }]);
      expect(calls).toBe(0);
    } finally {
      await quiet.close();
    }
  });
});
