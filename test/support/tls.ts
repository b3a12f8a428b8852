import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import selfsigned from 'selfsigned';

/**
 * A self-signed certificate for `localhost`, 127.0.0.1 and ::1, made at test time: HTTPS test receivers
 * serve it, and the service trusts it through Node's standard NODE_EXTRA_CA_CERTS (set by the global
 * setup before test processes start), with verification left on.
 */
export interface TestCertificate {
  cert: string;
  key: string;
  /** Where the certificate's PEM is written (NODE_EXTRA_CA_CERTS). */
  certPath: string;
}

export async function makeTestCertificate(dir: string): Promise<TestCertificate> {
  const pems = await selfsigned.generate([{ name: 'commonName', value: 'localhost' }], {
    keyType: 'ec',
    algorithm: 'sha256',
    notAfterDate: new Date(Date.now() + 7 * 86_400_000),
    extensions: [
      { name: 'basicConstraints', cA: true },
      { name: 'keyUsage', digitalSignature: true, keyCertSign: true },
      { name: 'extKeyUsage', serverAuth: true },
      {
        name: 'subjectAltName',
        altNames: [
          { type: 2, value: 'localhost' },
          { type: 7, ip: '127.0.0.1' },
          { type: 7, ip: '::1' },
        ],
      },
    ],
  });
  const certPath = path.join(dir, 'test-ca.pem');
  await writeFile(certPath, pems.cert);
  return { cert: pems.cert, key: pems.private, certPath };
}
