/** A JSON value read as an object: the object itself, or `{}` for anything else (a CRM answer of an unexpected shape). */
export function asRecord(value: unknown): Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
}
