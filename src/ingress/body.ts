import type { IncomingMessage } from 'node:http';

/** The spec's ingress limit. */
const MAX_BODY_BYTES = 1024 * 1024;

export type BodyRead = { ok: true; text: string } | { ok: false; reason: 'too_large' | 'aborted' | 'not_utf8' };

// JSON between systems is UTF-8 (RFC 8259): a body that is not is refused rather than altered, so the
// text stored is the body's bytes, which forwarding sends on as they came. A BOM is kept, not dropped.
const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/**
 * Reads a request body up to `limit` bytes. A declared or actual size over the limit stops reading
 * at once (the rest is drained, not buffered), so an oversized body costs no memory.
 */
export function readBody(req: IncomingMessage, limit = MAX_BODY_BYTES): Promise<BodyRead> {
  return new Promise((resolve) => {
    const declared = Number(req.headers['content-length']);
    if (Number.isFinite(declared) && declared > limit) {
      req.resume();
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
        req.resume();
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
