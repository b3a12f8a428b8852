/** A request body as the emulators read it: its JSON, or {@link INVALID_JSON} (each vendor answers that its own way). */
export const INVALID_JSON = Symbol('invalid JSON');

export function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return INVALID_JSON;
  }
}
