import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { openApiDocument } from '../../src/rest/openapi.js';

/**
 * Every REST response a test receives goes through {@link apiFetch}, which checks it against our OpenAPI
 * document: the status must be documented for the operation, required headers present and valid, and
 * the JSON body valid against the documented schema. Undocumented paths must answer the JSON 404.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- tests read bodies freely; the schema already checked them
export interface ApiResponse<T = any> {
  status: number;
  headers: Headers;
  body: T;
  text: string;
}

type Doc = {
  paths: Record<string, Record<string, { responses: Record<string, ResponseObject> }>>;
  components: { responses: Record<string, ResponseObject> };
};
type ResponseObject = {
  $ref?: string;
  headers?: Record<string, { $ref?: string; required?: boolean; schema?: unknown }>;
  content?: Record<string, { schema?: unknown }>;
};

const doc = openApiDocument as unknown as Doc;
// ajv-formats ships CommonJS whose default export is the function; ESM interop may wrap it once more.
type AddFormats = (ajv: Ajv2020) => unknown;
const addFormats = ((addFormatsModule as unknown as { default?: AddFormats }).default ?? addFormatsModule) as unknown as AddFormats;
const ajv = new Ajv2020({ strict: false, allErrors: true });
addFormats(ajv);
ajv.addSchema(openApiDocument, 'openapi');

const validators = new Map<string, ValidateFunction>();

/** Fetches `url` and validates the response against the contract; fails the test on any mismatch. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- see ApiResponse
export async function apiFetch<T = any>(url: string, init: RequestInit = {}): Promise<ApiResponse<T>> {
  const res = await fetch(url, init);
  const text = await res.text();
  const method = (init.method ?? 'GET').toLowerCase();
  const body = res.headers.get('content-type')?.includes('json') && text ? JSON.parse(text) : text;
  const problems = checkResponse(new URL(url).pathname, method, res.status, res.headers, body);
  if (problems.length > 0) {
    throw new Error(
      `${method.toUpperCase()} ${new URL(url).pathname} -> ${res.status} breaks the OpenAPI contract:\n  ${problems.join('\n  ')}\nbody: ${text.slice(0, 800)}`,
    );
  }
  return { status: res.status, headers: res.headers, body: body as T, text };
}

/** The problems of one response against the document (empty when it conforms). */
export function checkResponse(path: string, method: string, status: number, headers: Headers, body: unknown): string[] {
  const template = Object.keys(doc.paths).find((p) => pathPattern(p).test(path));
  const operation = template ? doc.paths[template]?.[method] : undefined;
  if (!template || !operation) {
    // Undocumented routes: the JSON 404 of the spec, with the Link header under /api/v1.
    const problems = validate('#/components/schemas/Error', body);
    if (status !== 404) problems.unshift(`undocumented route answered ${status}, not 404`);
    if (path.startsWith('/api/v1') && !headers.get('link')) problems.push('missing Link header');
    return problems;
  }
  const declared = operation.responses[String(status)] ?? operation.responses.default;
  if (!declared) return [`status ${status} is not documented for ${method.toUpperCase()} ${template}`];
  const pointer = declared.$ref ?? `#/paths/${escape(template)}/${method}/responses/${operation.responses[String(status)] ? status : 'default'}`;
  const response = resolve(pointer);
  const problems: string[] = [];
  for (const [name, header] of Object.entries(response.headers ?? {})) {
    const spec = header.$ref ? (resolve(header.$ref) as typeof header) : header;
    const value = headers.get(name);
    if (value === null) {
      if (spec.required) problems.push(`missing required header ${name}`);
      continue;
    }
    const headerPointer = header.$ref ?? `${pointer}/headers/${escape(name)}`;
    problems.push(...validate(`${headerPointer}/schema`, /^\d+$/.test(value) ? Number(value) : value).map((p) => `header ${name}: ${p}`));
  }
  const json = response.content?.['application/json'];
  if (json?.schema) problems.push(...validate(`${pointer}/content/application~1json/schema`, body));
  return problems;
}

function validate(pointer: string, value: unknown): string[] {
  let validator = validators.get(pointer);
  if (!validator) {
    validator = ajv.compile({ $ref: `openapi${pointer}` });
    validators.set(pointer, validator);
  }
  return validator(value) ? [] : (validator.errors ?? []).map((e) => `${e.instancePath || '(body)'} ${e.message ?? ''} ${JSON.stringify(e.params)}`);
}

function resolve(pointer: string): ResponseObject {
  const target = pointer
    .replace(/^#\//, '')
    .split('/')
    .reduce<unknown>((node, part) => (node as Record<string, unknown>)[part.replace(/~1/g, '/').replace(/~0/g, '~')], doc);
  const object = target as ResponseObject;
  return object.$ref ? resolve(object.$ref) : object;
}

function pathPattern(template: string): RegExp {
  return new RegExp(`^${template.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{[^}]+\}/g, '[^/]+')}$`);
}

function escape(segment: string): string {
  return segment.replace(/~/g, '~0').replace(/\//g, '~1');
}
