import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { RequestHandler, Router } from 'express';
import YAML from 'yaml';

/** The hand-written OpenAPI 3.1 contract (src/rest/openapi.yaml), parsed once. */
export const OPENAPI_FILE = fileURLToPath(new URL('./openapi.yaml', import.meta.url));
const source = readFileSync(OPENAPI_FILE, 'utf8');
export const openApiDocument = YAML.parse(source) as Record<string, unknown>;
const json = JSON.stringify(openApiDocument);

/** GET /openapi.json and /openapi.yaml: no key, cacheable for five minutes, under the per-IP limit. */
export function installOpenApi(router: Router, perIp: RequestHandler): void {
  router.get('/openapi.json', perIp, (_req, res) => {
    res.set('Cache-Control', 'public, max-age=300').type('application/json').send(json);
  });
  router.get('/openapi.yaml', perIp, (_req, res) => {
    res.set('Cache-Control', 'public, max-age=300').type('application/yaml').send(source);
  });
}
