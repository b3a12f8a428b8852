/**
 * At most `max` characters of client-supplied text for a message, without control characters: enough
 * for the client to see what was refused, never an unbounded echo.
 */
export function excerpt(value: string, max: number): string {
  // eslint-disable-next-line no-control-regex -- control characters are exactly what this removes
  const clean = value.replace(/[\u0000-\u001f\u007f]/g, '');
  return clean.length > max ? `${clean.slice(0, max)}...` : clean;
}
