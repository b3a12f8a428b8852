/**
 * The key of one value a connection's runs remember (src/connectors/crm/<kind>/memory.ts): the
 * connection's memory key and the value's kind and name, in one string.
 */
export function remembered(memoryKey: string, ...parts: string[]): string {
  return [memoryKey, ...parts].join('\n');
}
