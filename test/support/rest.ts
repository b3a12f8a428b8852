import { apiFetch } from './openapi.js';

/** GET an /api/v1 path with a key; the response is checked against the OpenAPI document. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- bodies are schema-checked
export function apiGet<T = any>(baseUrl: string, path: string, key?: string) {
  return apiFetch<T>(`${baseUrl}/api/v1${path}`, key ? { headers: { authorization: `Bearer ${key}` } } : {});
}

/** A from/to window around now, as query parameters. */
export function around(now = new Date(), daysBefore = 1, daysAfter = 1): string {
  const from = new Date(now.getTime() - daysBefore * 86_400_000).toISOString();
  const to = new Date(now.getTime() + daysAfter * 86_400_000).toISOString();
  return `from=${encodeURIComponent(from)}&to=${encodeURIComponent(to)}`;
}
