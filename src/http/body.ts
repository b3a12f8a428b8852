import type { IncomingMessage } from 'node:http';

/** The spec's ingress limit, the default. */
const MAX_BODY_BYTES = 1024 * 1024;

export type BodyRead = { ok: true; text: string } | { ok: false; reason: 'too_large' | 'aborted' | 'not_utf8' };

// JSON between systems is UTF-8 (RFC 8259): a body that is not is refused rather than altered, so the
// text stored is the body's bytes, which forwarding sends on as they came. A BOM is kept, not dropped.
const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/**
 * How much of an oversized body is read and dropped after the answer, and for how long, so that a client
 * still sending reads our 413 instead of a reset (RFC 9112 section 9.6, lingering close). Past either
 * bound the connection is cut: what is still coming is not ours to wait for.
 */
const DRAIN_BYTES = 16 * 1024 * 1024;
const DRAIN_MS = 10_000;

/**
 * Reads a request body up to `limit` bytes (the ingress's 1 MB unless said; the REST API's JSON bodies: 64 KB). A declared or actual size over the limit stops keeping it
 * at once: the rest is read and dropped (within {@link DRAIN_BYTES} and {@link DRAIN_MS}), never
 * buffered, so an oversized body costs no memory and the client can read the answer.
 */
export function readBody(req: IncomingMessage, limit = MAX_BODY_BYTES): Promise<BodyRead> {
  return new Promise((resolve) => {
    const declared = Number(req.headers['content-length']);
    if (Number.isFinite(declared) && declared > limit) {
      drain(req, 0);
      return resolve({ ok: false, reason: 'too_large' });
    }
    const chunks: Buffer[] = [];
    let size = 0;
    let done = false;
    const finish = (result: BodyRead) => {
      if (done) return;
      done = true;
      resolve(result);
    };
    req.on('data', (chunk: Buffer) => {
      if (done) return;
      size += chunk.length;
      if (size > limit) {
        chunks.length = 0;
        drain(req, size);
        return finish({ ok: false, reason: 'too_large' });
      }
      chunks.push(chunk);
    });
    req.on('end', () => {
      try {
        finish({ ok: true, text: utf8.decode(Buffer.concat(chunks, size)) });
      } catch {
        finish({ ok: false, reason: 'not_utf8' });
      }
    });
    req.on('aborted', () => finish({ ok: false, reason: 'aborted' }));
    req.on('error', () => finish({ ok: false, reason: 'aborted' }));
  });
}

/** Reads and drops the rest of `req` (`read` bytes already came), cutting the connection past the drain bounds. */
function drain(req: IncomingMessage, read: number): void {
  let dropped = read;
  const cut = () => req.socket.destroy();
  const timer = setTimeout(cut, DRAIN_MS);
  timer.unref();
  req.on('data', (chunk: Buffer) => {
    dropped += chunk.length;
    if (dropped > DRAIN_BYTES) cut();
  });
  req.once('end', () => clearTimeout(timer));
  req.once('close', () => clearTimeout(timer));
  req.resume();
}
